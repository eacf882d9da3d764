"""Small clickable charts drawn with QPainter (PySide6-Essentials has no QtCharts):
horizontal bars, stacked monthly bars and a weekday x hour heat map. Each chart
holds plain data and emits ``clicked(label, ids)`` with the conversations behind the
bar or cell under the mouse; none reads the store."""
from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics, QMouseEvent, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

# A colour-blind-safe qualitative palette (Okabe-Ito), then a few more.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999",
           "#7F3C8D", "#11A579", "#3969AC", "#F2B701", "#E73F74", "#80BA5A")
WEEKDAY_SHORT = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def colour(i: int) -> QColor:
    return QColor(PALETTE[i % len(PALETTE)])


class BarChart(QWidget):
    """Horizontal bars, largest first: ``set_bars([(label, count, ids), ...])``."""

    clicked = Signal(str, list)

    def __init__(self, title: str = "", parent: QWidget | None = None, *, empty: str = "Nothing to show yet."):
        super().__init__(parent)
        self.title = title
        self.empty = empty
        self.bars: list[tuple[str, int, list[str]]] = []
        self.colours: dict[str, QColor] = {}
        self.setMouseTracking(True)
        self.setMinimumHeight(120)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self._rects: list[QRectF] = []

    def set_bars(self, bars, colours: dict[str, QColor] | None = None) -> None:
        self.bars = [(str(label), int(count), list(ids)) for label, count, ids in bars]
        self.colours = colours or {}
        self.updateGeometry()
        self.update()

    def sizeHint(self) -> QSize:
        return QSize(360, 40 + 24 * max(len(self.bars), 3))

    def paintEvent(self, _event) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        fm = QFontMetrics(self.font())
        y = 4
        if self.title:
            f = p.font(); f.setBold(True); p.setFont(f)
            p.drawText(4, y + fm.ascent(), self.title)
            f.setBold(False); p.setFont(f)
            y += fm.height() + 6
        self._rects = []
        if not self.bars:
            p.setPen(self.palette().placeholderText().color())
            # wrapped, inset: a narrow chart (the Insights tab's answer) cut the hint off at both ends
            p.drawText(QRectF(8, y, max(self.width() - 16, 1), self.height() - y),
                       int(Qt.AlignmentFlag.AlignCenter) | int(Qt.TextFlag.TextWordWrap), self.empty)
            return
        label_w = min(max(fm.horizontalAdvance(b[0]) for b in self.bars) + 12, self.width() // 2)
        top = max(b[1] for b in self.bars) or 1
        row_h = max(16, min(26, (self.height() - y - 4) // len(self.bars)))
        avail = self.width() - label_w - 50
        for i, (label, count, _ids) in enumerate(self.bars):
            ry = y + i * row_h
            shown = fm.elidedText(label, Qt.TextElideMode.ElideRight, label_w - 8)
            p.setPen(self.palette().text().color())
            p.drawText(QRectF(0, ry, label_w - 8, row_h), Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                       shown)
            w = max(2.0, avail * count / top)
            rect = QRectF(label_w, ry + 3, w, row_h - 6)
            p.fillRect(rect, self.colours.get(label, colour(0)))
            p.drawText(QRectF(label_w + w + 6, ry, 44, row_h), Qt.AlignmentFlag.AlignVCenter, f"{count:,}")
            self._rects.append(QRectF(0, ry, self.width(), row_h))

    def _at(self, pos) -> int | None:
        for i, r in enumerate(self._rects):
            if r.contains(pos):
                return i
        return None

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        i = self._at(event.position())
        self.setCursor(Qt.CursorShape.PointingHandCursor if i is not None else Qt.CursorShape.ArrowCursor)
        if i is not None:
            label, count, _ids = self.bars[i]
            QToolTip.showText(event.globalPosition().toPoint(), f"{label}: {count:,} conversations — click to list them",
                              self)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        i = self._at(event.position())
        if i is not None and event.button() == Qt.MouseButton.LeftButton:
            self.clicked.emit(self.bars[i][0], self.bars[i][2])

    def click_bar(self, i: int) -> None:
        """What a click on bar ``i`` does (for keyboard use and tests)."""
        self.clicked.emit(self.bars[i][0], self.bars[i][2])


class MonthChart(QWidget):
    """Conversations per month, stacked by topic: ``set_data({month: {topic: n}}, topics)``.
    A click on a segment emits ``clicked("2024-03 · topic", [])`` with ``segment``
    set to (month, topic): the pane looks up the ids."""

    segment_clicked = Signal(str, str)  # month, topic

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.months: list[str] = []
        self.data: dict[str, dict[str, int]] = {}
        self.topics: list[str] = []
        self._segments: list[tuple[QRectF, str, str, int]] = []
        self.setMouseTracking(True)
        self.setMinimumHeight(180)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def set_data(self, per_month: dict[str, dict[str, int]], topics: list[str]) -> None:
        self.data = per_month
        self.months = _month_range(sorted(per_month)) if per_month else []
        self.topics = list(topics)
        self.update()

    def colour_of(self, topic: str) -> QColor:
        return colour(self.topics.index(topic)) if topic in self.topics else QColor("#999999")

    def paintEvent(self, _event) -> None:
        p = QPainter(self)
        fm = QFontMetrics(self.font())
        f = p.font(); f.setBold(True); p.setFont(f)
        p.drawText(4, 4 + fm.ascent(), "Conversations per month, by topic")
        f.setBold(False); p.setFont(f)
        self._segments = []
        if not self.months:
            p.setPen(self.palette().placeholderText().color())
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "No conversations in this period.")
            return
        legend_h = self._legend(p, fm, fm.height() + 10)
        top_y = fm.height() + 14 + legend_h
        bottom = self.height() - fm.height() - 6
        left = 34
        peak = max(sum(v.values()) for v in self.data.values()) or 1
        step = (self.width() - left - 6) / len(self.months)
        bar_w = max(2.0, step * 0.75)
        p.setPen(QPen(self.palette().mid().color()))
        p.drawLine(left, bottom, self.width() - 4, bottom)
        p.setPen(self.palette().text().color())
        p.drawText(QRectF(0, top_y - fm.height() / 2, left - 4, fm.height()), Qt.AlignmentFlag.AlignRight, f"{peak}")
        every = max(1, int(fm.horizontalAdvance("2024-03 ") / step) + 1)
        for i, m in enumerate(self.months):
            x = left + i * step + (step - bar_w) / 2
            y = bottom
            for topic in self.topics:
                n = self.data.get(m, {}).get(topic, 0)
                if not n:
                    continue
                h = (bottom - top_y) * n / peak
                rect = QRectF(x, y - h, bar_w, h)
                p.fillRect(rect, self.colour_of(topic))
                self._segments.append((rect, m, topic, n))
                y -= h
            if i % every == 0:
                p.drawText(QRectF(left + i * step - 20, bottom + 2, step + 40, fm.height()),
                           Qt.AlignmentFlag.AlignHCenter, m)

    def _legend(self, p: QPainter, fm: QFontMetrics, y: int) -> int:
        x, row = 4, 0
        for i, topic in enumerate(self.topics):
            w = fm.horizontalAdvance(topic) + 24
            if x + w > self.width() and x > 4:
                x, row = 4, row + 1
            p.fillRect(QRectF(x, y + row * (fm.height() + 2) + 3, 10, 10), colour(i))
            p.drawText(x + 14, y + row * (fm.height() + 2) + fm.ascent(), topic)
            x += w
        return (row + 1) * (fm.height() + 2) if self.topics else 0

    def _at(self, pos):
        for rect, m, topic, n in self._segments:
            if rect.contains(pos):
                return m, topic, n
        return None

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        hit = self._at(event.position())
        self.setCursor(Qt.CursorShape.PointingHandCursor if hit else Qt.CursorShape.ArrowCursor)
        if hit:
            QToolTip.showText(event.globalPosition().toPoint(), f"{hit[0]} · {hit[1]}: {hit[2]:,} conversations", self)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        hit = self._at(event.position())
        if hit and event.button() == Qt.MouseButton.LeftButton:
            self.segment_clicked.emit(hit[0], hit[1])


def _month_range(months: list[str]) -> list[str]:
    """Every month from the first to the last, so empty months show as gaps."""
    y, m = map(int, months[0].split("-"))
    ly, lm = map(int, months[-1].split("-"))
    out = []
    while (y, m) <= (ly, lm):
        out.append(f"{y:04d}-{m:02d}")
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return out


class HeatMap(QWidget):
    """Weekday (rows, Monday first) x local hour (columns): ``set_grid(7 x 24 counts)``."""

    cell_clicked = Signal(int, int)  # weekday, hour

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.grid = [[0] * 24 for _ in range(7)]
        self.setMouseTracking(True)
        self.setMinimumHeight(170)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def set_grid(self, grid: list[list[int]]) -> None:
        self.grid = grid
        self.update()

    def _geometry(self, fm: QFontMetrics):
        left = fm.horizontalAdvance("Wed ") + 6
        top = fm.height() + 10
        cw = (self.width() - left - 4) / 24
        ch = (self.height() - top - fm.height() - 6) / 7
        return left, top, cw, ch

    def paintEvent(self, _event) -> None:
        p = QPainter(self)
        fm = QFontMetrics(self.font())
        f = p.font(); f.setBold(True); p.setFont(f)
        p.drawText(4, 4 + fm.ascent(), "When you chat: weekday × hour")
        f.setBold(False); p.setFont(f)
        left, top, cw, ch = self._geometry(fm)
        peak = max(max(r) for r in self.grid) or 1
        base = QColor(PALETTE[0])
        for d in range(7):
            p.drawText(QRectF(0, top + d * ch, left - 4, ch), Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                       WEEKDAY_SHORT[d])
            for h in range(24):
                n = self.grid[d][h]
                c = QColor(base)
                c.setAlphaF(0.06 + 0.94 * n / peak if n else 0.04)
                p.fillRect(QRectF(left + h * cw + 1, top + d * ch + 1, cw - 2, ch - 2), c)
        for h in range(0, 24, 3):
            p.drawText(QRectF(left + h * cw, top + 7 * ch + 2, cw * 3, fm.height()), Qt.AlignmentFlag.AlignLeft,
                       f"{h:02d}")

    def _at(self, pos):
        left, top, cw, ch = self._geometry(QFontMetrics(self.font()))
        h = int((pos.x() - left) // cw)
        d = int((pos.y() - top) // ch)
        if 0 <= d < 7 and 0 <= h < 24 and pos.x() >= left and pos.y() >= top:
            return d, h
        return None

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        hit = self._at(event.position())
        if hit:
            d, h = hit
            QToolTip.showText(event.globalPosition().toPoint(),
                              f"{WEEKDAY_SHORT[d]} {h:02d}:00–{h:02d}:59: {self.grid[d][h]:,} conversations", self)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        hit = self._at(event.position())
        if hit and self.grid[hit[0]][hit[1]] and event.button() == Qt.MouseButton.LeftButton:
            self.cell_clicked.emit(*hit)
