"""The app's look: one light theme as a Qt style sheet plus a few named colours.

Only presentation lives here; widgets refer to object names (``answerCard``,
``questionBubble``, ...) so the look can change without touching behaviour.
"""
from __future__ import annotations

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

ACCENT = "#2f6feb"
TEXT = "#1f2328"
MUTED = "#59636e"
BORDER = "#d0d7de"
CARD = "#ffffff"
WINDOW = "#f6f8fa"
ERROR = "#b42318"

STYLE_SHEET = f"""
QMainWindow, QDialog {{ background: {WINDOW}; }}
QWidget {{ color: {TEXT}; font-size: 10pt; }}
QTabWidget::pane {{ border: 1px solid {BORDER}; border-radius: 6px; background: {CARD}; top: -1px; }}
QTabBar::tab {{ padding: 7px 18px; margin-right: 2px; border: 1px solid transparent;
               border-top-left-radius: 6px; border-top-right-radius: 6px; color: {MUTED}; }}
QTabBar::tab:selected {{ background: {CARD}; border-color: {BORDER}; border-bottom-color: {CARD};
                        color: {TEXT}; font-weight: bold; }}
QLabel#paneTitle {{ font-size: 13pt; font-weight: bold; }}
QLabel#muted, QLabel#progressText {{ color: {MUTED}; }}
QLabel#error {{ color: {ERROR}; }}
QLabel#dropHint {{ border: 2px dashed {BORDER}; border-radius: 8px; padding: 14px; color: {MUTED};
                  background: {WINDOW}; }}
QFrame#answerCard {{ background: {CARD}; border: 1px solid {BORDER}; border-radius: 8px; }}
QFrame#answerCard[failed="true"] {{ border-color: #f0b8b0; background: #fff8f6; }}
QLabel#answerText {{ font-size: 11.5pt; }}
QLabel#questionBubble {{ background: #dbe7ff; border-radius: 8px; padding: 8px 12px; }}
QFrame#fileProgress {{ background: {CARD}; border: 1px solid {BORDER}; border-radius: 6px; }}
QPushButton {{ padding: 5px 14px; border: 1px solid {BORDER}; border-radius: 6px; background: {CARD}; }}
QPushButton:hover {{ border-color: {ACCENT}; }}
QPushButton:disabled {{ color: #8c959f; background: {WINDOW}; }}
QPushButton#primary {{ background: {ACCENT}; color: white; border-color: {ACCENT}; font-weight: bold; }}
QPushButton#primary:disabled {{ background: #9db7f0; border-color: #9db7f0; }}
QPushButton#link {{ border: none; background: transparent; color: {ACCENT}; padding: 2px 0; text-align: left; }}
QPushButton#link:hover {{ text-decoration: underline; }}
QLineEdit, QPlainTextEdit, QComboBox, QDateEdit {{ padding: 5px; border: 1px solid {BORDER}; border-radius: 6px;
                                                 background: {CARD}; }}
QComboBox::drop-down, QDateEdit::drop-down {{ border: none; width: 22px; }}
QComboBox::down-arrow, QDateEdit::down-arrow {{ width: 0; height: 0; border-left: 5px solid transparent;
    border-right: 5px solid transparent; border-top: 6px solid {MUTED}; }}
QLineEdit:focus {{ border-color: {ACCENT}; }}
QProgressBar {{ border: 1px solid {BORDER}; border-radius: 4px; background: {WINDOW}; height: 12px;
               text-align: center; font-size: 8pt; }}
QProgressBar::chunk {{ background: {ACCENT}; border-radius: 3px; }}
QHeaderView::section {{ background: {WINDOW}; border: none; border-bottom: 1px solid {BORDER};
                       padding: 4px 6px; font-weight: bold; }}
QTableView, QTreeWidget, QTreeView {{ border: 1px solid {BORDER}; border-radius: 6px; background: {CARD};
                                      alternate-background-color: #f8fafc; selection-background-color: #cfe0ff;
                                      selection-color: {TEXT}; }}
QScrollArea#chat {{ border: none; background: {WINDOW}; }}
QWidget#chatBody {{ background: {WINDOW}; }}
"""


def apply_theme(app: QApplication) -> None:
    app.setStyle("Fusion")  # the same widgets on every platform, and a sane base for the sheet
    palette = app.palette()
    palette.setColor(QPalette.ColorRole.Window, QColor(WINDOW))
    palette.setColor(QPalette.ColorRole.WindowText, QColor(TEXT))
    palette.setColor(QPalette.ColorRole.Base, QColor(CARD))
    palette.setColor(QPalette.ColorRole.Text, QColor(TEXT))
    palette.setColor(QPalette.ColorRole.Highlight, QColor("#cfe0ff"))
    palette.setColor(QPalette.ColorRole.HighlightedText, QColor(TEXT))
    palette.setColor(QPalette.ColorRole.ToolTipBase, QColor(CARD))
    palette.setColor(QPalette.ColorRole.ToolTipText, QColor(TEXT))
    app.setPalette(palette)
    app.setStyleSheet(STYLE_SHEET)
