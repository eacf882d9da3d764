"""``hindsight --self-test``: the first-launch check of an installed Hindsight.

It opens the real window (offscreen where there is no display), builds the real
question engine the way the app does, imports the small Spotify export that ships
beside this module into a temporary store, answers one question through the
window's Ask pane, and then runs every model role once on a short input. Every step
is reported by name with its time; the exit code is 0 only when all passed. The
user's data folder is never touched: the store lives in a temporary folder that is
removed afterwards.
"""
from __future__ import annotations

import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

log = logging.getLogger(__name__)

EXPORT_DIR = Path(__file__).resolve().parent  # holds StreamingHistory_music_0.json
QUESTION = "How many songs by Harbour Lights did I listen to?"


@dataclass
class Step:
    name: str
    ok: bool
    seconds: float
    detail: str

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class Report:
    steps: list[Step]
    window_after_s: float | None  # since the process started
    answer_after_s: float | None
    rss_mb: float | None  # resident memory after the answer
    platform: str

    @property
    def ok(self) -> bool:
        return bool(self.steps) and all(s.ok for s in self.steps)

    @property
    def failed(self) -> list[str]:
        return [s.name for s in self.steps if not s.ok]

    def to_json(self) -> dict:
        return {"ok": self.ok, "failed": self.failed, "steps": [s.to_json() for s in self.steps],
                "window_after_s": self.window_after_s, "answer_after_s": self.answer_after_s,
                "rss_mb": self.rss_mb, "platform": self.platform}


# ---- each model role, once ---------------------------------------------------------
def _check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def _planner(model) -> str:
    text = model.complete("Answer with one word: the colour of the sky on a clear day is", max_tokens=4)
    _check(isinstance(text, str) and text.strip() != "", f"no text generated ({text!r})")
    return f"generated {text.strip()!r}"


def _embedder(model) -> str:
    rows = model.embed(["live music on the night ferry"])
    _check(len(rows) == 1 and len(rows[0]) == model.dimension, "wrong embedding shape")
    norm = sum(v * v for v in rows[0]) ** 0.5
    _check(abs(norm - 1.0) < 1e-2, f"embedding not normalised (norm {norm:.3f})")
    return f"{model.dimension} dimensions"


def _sparse(model) -> str:
    [weights] = model.encode(["songs by Harbour Lights"])
    _check(bool(weights) and all(w > 0 for w in weights.values()), "no term weights")
    return f"{len(weights)} terms"


def _patterns(model) -> str:
    labels = model.classify("how many songs did I listen to", ["source: spotify", "kind: workout"])
    _check(len(labels) == 2 and set(labels) <= {"relevant", "irrelevant", "partial"}, f"labels {labels!r}")
    return f"labels {labels}"


def _events(model) -> str:
    scores = model.score([("songs by Harbour Lights", "Listened to Midnight Ferry by Harbour Lights")])
    _check(len(scores) == 1 and 0.0 <= scores[0] <= 1.0, f"scores {scores!r}")
    return f"score {scores[0]:.2f}"


def _extractor(model) -> str:
    [value] = model.extract([("Listened to Midnight Ferry by Harbour Lights", "artist")])
    _check(isinstance(value, str), f"value {value!r}")
    return f"artist {value!r}"


def _segmenter(model) -> str:
    sentences = model.sentences("I flew to Lisbon in May. Then I took the ferry.")
    _check(len(sentences) == 2, f"{len(sentences)} sentences, not 2")
    entities = model.entities("I flew to Lisbon in May.")
    return f"{len(sentences)} sentences, entities {entities}"


MODEL_CHECKS: dict[str, tuple[str, Callable[[object], str]]] = {
    "planner": ("planner (llama.cpp)", _planner),
    "planner_tuned": ("fine-tuned planner (llama.cpp + LoRA)", _planner),
    "embedder": ("embedder (ONNX MiniLM)", _embedder),
    "sparse_encoder": ("SPLADE (ONNX)", _sparse),
    "pattern_classifier": ("pattern cross-encoder (ONNX)", _patterns),
    "event_classifier": ("event cross-encoder (ONNX)", _events),
    "extractor": ("extractor (CTranslate2)", _extractor),
    "segmenter": ("spaCy segmenter", _segmenter),
}


# ---- the run -------------------------------------------------------------------------
def process_age() -> float | None:
    """Seconds since this process started (Linux), so the figures include the start-up
    of the interpreter and of the bundle; None where that cannot be read."""
    try:
        start_ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return round(uptime - start_ticks / os.sysconf("SC_CLK_TCK"), 2)
    except (OSError, ValueError, IndexError):
        return None


def rss_mb() -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError):
        pass
    return None


def _has_display() -> bool:
    if sys.platform != "linux":
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or os.environ.get("QT_QPA_PLATFORM"))


def run(*, echo: Callable[[str], None] = lambda _m: None, timeout: float = 600.0,
        engine_factory=None, export_dir: Path = EXPORT_DIR, question: str = QUESTION) -> Report:
    """Run every step; never raises for a failing step (it is reported). ``engine_factory``
    is the app's (``app.gui.engine_factory.make_engine``) unless a test passes its own."""
    if not _has_display():
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
        echo("no display: the window is drawn offscreen")
    steps: list[Step] = []
    report = Report(steps, None, None, None, "")
    with tempfile.TemporaryDirectory(prefix="hindsight-self-test-") as tmp:
        _run(Path(tmp), report, echo, timeout, engine_factory, export_dir, question)
    return report


def _step(report: Report, echo, name: str, started: float, ok: bool, detail: str) -> bool:
    step = Step(name, ok, round(time.monotonic() - started, 2), detail)
    report.steps.append(step)
    echo(f"{'ok  ' if ok else 'FAIL'} {name}: {detail} ({step.seconds:.1f} s)")
    return ok


def _run(tmp: Path, report: Report, echo, timeout: float, engine_factory, export_dir: Path, question: str) -> None:
    from engine.ingest import import_paths
    from engine.settings import Settings
    from engine.store import EventStore, store_path

    settings = Settings(home_timezone="UTC")
    settings.save(tmp)
    store = EventStore(store_path(tmp))
    window = None
    try:
        started = time.monotonic()
        try:
            result = import_paths(store, [export_dir], context=settings.import_context())
            ok = result.added > 0 and not result.failed
            detail = f"{result.added} events from {export_dir.name}/" if ok else \
                f"{result.added} events; failed: {[f.message for f in result.failed]}"
        except Exception as exc:  # noqa: BLE001 - reported by name
            log.exception("self-test import")
            ok, detail = False, f"{type(exc).__name__}: {exc}"
        _step(report, echo, "import", started, ok, detail)

        started = time.monotonic()
        try:
            qt_app, window = _open_window(store, settings, tmp, engine_factory)
            report.platform = qt_app.platformName()
            exposed = _wait(qt_app, lambda: window.windowHandle() is not None and window.windowHandle().isExposed(),
                            30)
            report.window_after_s = process_age()
            ok, detail = exposed, (f"shown on the {qt_app.platformName()!r} platform" if exposed
                                   else f"not exposed after 30 s on {qt_app.platformName()!r}")
        except Exception as exc:  # noqa: BLE001
            log.exception("self-test window")
            ok, detail = False, f"{type(exc).__name__}: {exc}"
        if not _step(report, echo, "window", started, ok, detail) and window is None:
            return

        started = time.monotonic()
        engine = _wait_for_engine(qt_app, window, timeout)
        if isinstance(engine, str):
            _step(report, echo, "engine", started, False, engine)
            _run_models(report, echo, None)
            return
        _step(report, echo, "engine", started, True, "built with every model")

        started = time.monotonic()
        ok, detail = _ask(qt_app, window, question, timeout)
        report.answer_after_s = process_age()
        report.rss_mb = rss_mb()
        _step(report, echo, "question", started, ok, detail)

        _run_models(report, echo, getattr(engine, "models_registry", None))
    finally:
        if window is not None:
            window.shutdown()
            window.close()
        store.close()


def _run_models(report: Report, echo, registry) -> None:
    """Each role once; without the engine's registry (it could not be built), a fresh
    one, so the step that fails names the model at fault."""
    own = registry is None
    if own:
        from models.registry import ModelRegistry

        registry = ModelRegistry()
    from app.assemble import unused_roles

    unused = unused_roles()
    try:
        for role, (name, check) in MODEL_CHECKS.items():
            if role in unused:  # e.g. the tuned planner's base where the few-shot planner answers alone
                continue
            started = time.monotonic()
            try:
                detail = check(registry.get(role))
                ok = True
            except Exception as exc:  # noqa: BLE001 - a broken model is named, the others still run
                log.exception("self-test model %s", role)
                ok, detail = False, f"{type(exc).__name__}: {exc}"
            _step(report, echo, name, started, ok, detail)
    finally:
        if own:
            registry.close()


def _open_window(store, settings, data_dir: Path, engine_factory):
    from PySide6.QtWidgets import QApplication

    from app.gui import engine_factory as ef
    from app.gui.main_window import MainWindow
    from app.gui.style import apply_theme

    qt_app = QApplication.instance() or QApplication([sys.argv[0] if sys.argv else "hindsight"])
    qt_app.setApplicationName("Hindsight")
    apply_theme(qt_app)
    factory = engine_factory or (lambda s, st: ef.make_engine(s, st))
    window = MainWindow(store, settings, data_dir, engine_factory=factory)
    window.show()
    window.start()
    return qt_app, window


def _wait(qt_app, done, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        qt_app.processEvents()
        if done():
            return True
        time.sleep(0.02)
    return False


def _wait_for_engine(qt_app, window, timeout: float):
    """The engine the window built, or a message saying why there is none."""
    if not _wait(qt_app, lambda: window.ask.engine is not None or window.ask.problem is not None, timeout):
        return f"not built after {timeout:.0f} s"
    if window.ask.problem is not None:
        return str(window.ask.problem)
    return window.ask.engine


def _ask(qt_app, window, question: str, timeout: float) -> tuple[bool, str]:
    outcome: dict = {}
    window.ask.answered.connect(lambda a: outcome.setdefault("answer", a))
    window.ask.ask_failed.connect(lambda m: outcome.setdefault("error", m))
    if not window.ask.ask(question):
        return False, "the Ask pane did not take the question"
    if not _wait(qt_app, lambda: bool(outcome), timeout):
        window.ask.cancel()
        return False, f"no answer after {timeout:.0f} s"
    if "error" in outcome:
        return False, outcome["error"]
    answer = outcome["answer"]
    if not answer.ok:
        return False, f"no answer computed: {answer.answer_text}"
    return True, f"{question!r} → {answer.answer_text!r}"


def cli(obj, timeout: float) -> int:
    """The ``--self-test`` option's body: print each step (or JSON) and return the exit code."""
    import click

    from app.errors import EXIT_USER
    from app.shell import print_json

    echo = (lambda _m: None) if obj.json else (lambda m: click.echo(m, err=False))
    obj.resolve()  # tracebacks go to the log in the user data folder, not the terminal
    echo("Hindsight self-test: window, every model, an import and a question (a minute or two) …")
    report = run(echo=echo, timeout=timeout)
    if obj.json:
        print_json(report.to_json() | {"log": obj.log_path})
    elif report.ok:
        click.echo(f"Self-test passed: window after {report.window_after_s} s, first answer after "
                   f"{report.answer_after_s} s, {report.rss_mb} MB resident.")
    else:
        click.echo(f"Self-test FAILED: {', '.join(report.failed)} (details above and in {obj.log_path})",
                   err=True)
    return 0 if report.ok else EXIT_USER
