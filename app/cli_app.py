"""``hindsight app``: open the desktop app, or render it to a PNG and exit.

``--screenshot PATH`` shows the window offscreen when there is no display, asks
``--question`` (if given) and waits for its answer, waits until the window's
background loads settle, writes the PNG and exits; tests and the README's
screenshots use it. Errors become one-line messages (UserError) like every other
command; Qt is imported only when the command runs.
"""
from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

import click

from app.errors import UserError
from app.shell import Ctx, common, print_json

log = logging.getLogger(__name__)

DEMO_SUBDIR = "demo"


def _has_display() -> bool:
    if sys.platform != "linux":
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                or os.environ.get("QT_QPA_PLATFORM"))


def _data_dir(obj: Ctx, demo: bool) -> Path:
    from engine.settings import resolve_data_dir
    from engine.store import store_path

    if obj.data_dir is None and not os.environ.get("HINDSIGHT_DATA_DIR") and not demo:
        from app.gui.settings_dialog import remembered_data_dir

        remembered = remembered_data_dir()  # chosen in Settings on an earlier run
        if remembered:
            obj.data_dir = Path(remembered)
    base = resolve_data_dir(obj.data_dir)
    if not demo:
        return base
    demo_dir = base / DEMO_SUBDIR
    if not store_path(demo_dir).exists():
        raise UserError(f"no demo data in {demo_dir}; create it with 'hindsight demo' first")
    return demo_dir


def _wait_until(app, done, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        app.processEvents()
        if done():
            return True
        time.sleep(0.02)  # the GUI thread has nothing else to do; workers run meanwhile
    return False


def run_app(obj: Ctx, demo: bool, screenshot: str | None, question: str | None, tab: str | None,
            timeout: float, size: str, show_plan: bool = False) -> int:
    if screenshot and not _has_display():
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    if not _has_display():
        raise UserError("no display found (DISPLAY/WAYLAND_DISPLAY unset); run Hindsight on a desktop, or "
                        "use --screenshot PATH to render the window offscreen")
    data_dir = _data_dir(obj, demo)
    obj.data_dir = data_dir
    settings = obj.settings()
    store = obj.store()

    from PySide6.QtWidgets import QApplication

    from app.gui import engine_factory
    from app.gui.main_window import MainWindow
    from app.gui.style import apply_theme

    qt_app = QApplication.instance() or QApplication([sys.argv[0] if sys.argv else "hindsight"])
    qt_app.setApplicationName("Hindsight")
    qt_app.setOrganizationName("Hindsight")
    apply_theme(qt_app)

    # looked up at call time, so the engine can be replaced where the app is embedded
    window = MainWindow(store, settings, data_dir,
                        engine_factory=lambda s, st: engine_factory.make_engine(s, st))
    try:
        width, height = (int(v) for v in size.lower().split("x"))
    except ValueError:
        raise UserError(f"--size {size!r}: use WIDTHxHEIGHT, e.g. 1180x780") from None
    window.resize(width, height)
    tabs = {"ask": window.ask, "sources": window.sources, "timeline": window.timeline, "chats": window.chats,
            "insights": window.insights}
    if tab:
        window.tabs.setCurrentWidget(tabs[tab])
    window.show()
    window.start()
    outcome: dict = {}
    if question:
        window.ask.answered.connect(lambda a: outcome.setdefault("answer", a))
        window.ask.ask_failed.connect(lambda m: outcome.setdefault("error", m))
        window.ask.engine_unavailable.connect(lambda p: outcome.setdefault("error", str(p)))
        window.ask.ask(question)
    if not screenshot:
        try:
            return qt_app.exec()
        finally:
            window.shutdown()

    try:
        settled = _wait_until(qt_app, lambda: (not question or outcome) and not window.runner.jobs()
                              and not window.ask.stack.currentIndex() == window.ask.PAGE_LOADING, timeout)
        if not settled:
            log.warning("screenshot taken after %.0f s without the window settling", timeout)
        if show_plan and window.ask.cards():
            card = window.ask.cards()[-1]
            if card.plan_tree.isHidden():
                card.toggle_plan()
        _wait_until(qt_app, lambda: False, 0.2)  # let the last layouts and repaints happen
        path = Path(screenshot).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        if not window.grab().save(str(path)):
            raise UserError(f"cannot write the screenshot {path}")
    finally:
        window.shutdown()
        window.close()
    answer = outcome.get("answer")
    if obj.json:
        print_json({"screenshot": str(path), "settled": settled,
                    "answer": answer.to_json() if answer is not None else None, "error": outcome.get("error")})
    else:
        click.echo(f"Wrote {path}" + ("" if settled else f" (window still busy after {timeout:.0f} s)"))
        if outcome.get("error"):
            click.echo(f"note: {outcome['error']}", err=True)
    return 0


@common
@click.option("--demo", is_flag=True, help="Open the demo data (created by 'hindsight demo').")
@click.option("--screenshot", type=click.Path(dir_okay=False), metavar="PATH",
              help="Render the window to a PNG and exit (offscreen when there is no display).")
@click.option("--question", metavar="TEXT", help="Ask this question at start (with --screenshot: wait for the answer).")
@click.option("--tab", type=click.Choice(["ask", "sources", "timeline", "chats", "insights"]),
              help="The tab to show first.")
@click.option("--size", default="1180x780", show_default=True, help="Window size for --screenshot.")
@click.option("--timeout", type=click.FloatRange(min=1), default=300, show_default=True,
              help="With --screenshot: the most seconds to wait for the answer and loads.")
@click.option("--show-plan", is_flag=True, help="With --screenshot and --question: expand the answer's plan tree.")
@click.pass_obj
def _app_command(obj: Ctx, demo, screenshot, question, tab, size, timeout, show_plan) -> int:
    """Open the desktop app: drop in exports, ask questions, check the answers' events."""
    try:
        return run_app(obj, demo, screenshot, question, tab, timeout, size, show_plan)
    finally:
        obj.close()


app = click.command("app")(_app_command)
