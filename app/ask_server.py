"""The background process that keeps the models loaded for ``hindsight ask``.

Loading the planner, the encoders and the classifiers costs a CLI question about
3.5 s before it starts (8.2 s wall for a 4.7 s answer). The first ``hindsight ask``
starts this process; it loads the models once, answers questions sent over a Unix
socket, and exits after ``IDLE_SECONDS`` without one. The socket lives in a folder
only its user can enter (0700) and is itself 0600: no other user can ask, or read
an answer. One process per user and data folder.

The store and the index are opened for each question and closed after it, so an
import in another process is never locked out by a server that waits; only the
models stay warm.

The client side (:func:`ask`) falls back to answering in its own process (returns
None) when the server cannot be started or dies during the question; the CLI then
answers as it did before. A shell over the core: it never imports Qt.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

log = logging.getLogger(__name__)

#: seconds without a question after which the server exits (and frees its memory)
IDLE_SECONDS = 600
#: how long a client waits for a server it started to take questions (model loading)
START_SECONDS = 60
SERVER_ENV = "HINDSIGHT_ASK_SERVER"  # "0": never use or start the server
IDLE_ENV = "HINDSIGHT_ASK_SERVER_IDLE"  # seconds: how long a server started now stays idle


def socket_path(data_dir: Path) -> Path:
    """The server's socket for ``data_dir``: in the user's runtime folder (a socket's
    path is limited to ~100 bytes, a data folder's is not), named by the data folder."""
    base = Path(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()) / f"hindsight-{os.getuid()}"
    key = hashlib.sha1(str(Path(data_dir).resolve()).encode()).hexdigest()[:16]
    return base / f"ask-{key}.sock"


def _private_folder(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = path.stat()
    if st.st_uid != os.getuid():
        raise PermissionError(f"{path} belongs to another user; not using it for the ask server")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)


def _send(conn: socket.socket, message: dict) -> None:
    conn.sendall(json.dumps(message, default=str).encode() + b"\n")


class AskServer:
    """Answers questions for one data folder over a Unix socket, one at a time.
    ``make_engine(store, settings, data_dir, *, models, use_plan_cache)`` builds the
    engine for a question (tests pass a small fake; the app
    :func:`app.assemble.build_engine`); ``registry`` holds the warm models."""

    def __init__(self, data_dir: Path, *, idle_seconds: float = IDLE_SECONDS, registry=None,
                 make_engine: Callable | None = None, path: Path | None = None):
        self.data_dir = Path(data_dir)
        self.idle_seconds = idle_seconds
        self.path = path or socket_path(self.data_dir)
        self._registry = registry
        self._make_engine = make_engine
        self._stop = threading.Event()
        self.answered = 0

    def _models(self):
        if self._registry is None:
            from models.registry import ModelRegistry

            self._registry = ModelRegistry()
        return self._registry

    def serve(self) -> None:
        """Listen until idle for ``idle_seconds`` (or :meth:`stop`); the socket file is
        removed on the way out."""
        _private_folder(self.path.parent)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # the socket is created 0600, never briefly wider
        try:
            try:
                self.path.unlink()  # a dead server's
            except FileNotFoundError:
                pass
            sock.bind(str(self.path))
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        sock.listen(8)
        sock.settimeout(0.5)
        log.info("ask server for %s listening on %s", self.data_dir, self.path)
        last = time.monotonic()
        try:
            while not self._stop.is_set() and time.monotonic() - last < self.idle_seconds:
                try:
                    conn, _ = sock.accept()
                except TimeoutError:
                    continue
                with conn:
                    self._handle(conn)
                last = time.monotonic()
        finally:
            sock.close()
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass
            if self._registry is not None:
                self._registry.close()
            log.info("ask server for %s stopped after %d questions", self.data_dir, self.answered)

    def stop(self) -> None:
        self._stop.set()

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(None)
        try:
            request = json.loads(conn.makefile("rb").readline() or b"{}")
            if request.get("ping"):
                _send(conn, {"pong": os.getpid()})
                return
            answer = self._answer(request, lambda p: _send(conn, {"progress": p.message}))
            _send(conn, {"answer": answer})
            self.answered += 1
        except (BrokenPipeError, ConnectionResetError):
            log.info("the client left before its answer")
        except Exception as exc:  # noqa: BLE001 - a question's failure must not end the server
            log.exception("ask server: question failed")
            try:
                user = _is_user_error(exc)
                _send(conn, {"error": str(exc) if user else f"{type(exc).__name__}: {exc}", "user_error": user})
            except OSError:
                pass

    def _answer(self, request: dict, progress) -> dict:
        from engine.settings import Settings
        from engine.store import EventStore, store_path

        make = self._make_engine
        if make is None:
            from app.assemble import build_engine as make
        today = date.fromisoformat(request["today"]) if request.get("today") else None
        settings = Settings.load(self.data_dir)
        with EventStore(store_path(self.data_dir)) as store:
            if store.count() == 0:
                from app.errors import UserError

                raise UserError("no events yet: import an export first ('hindsight import PATH')")
            engine = make(store, settings, self.data_dir, models=self._models(),
                          use_plan_cache=not request.get("no_cache"))
            try:
                return engine.ask(request["question"], today=today, progress=progress).to_json()
            finally:
                engine.close()


def _is_user_error(exc: Exception) -> bool:
    from app.errors import UserError
    from engine.store import StoreError

    return isinstance(exc, (UserError, StoreError))


class ServerGone(RuntimeError):
    """The server closed the connection before the answer."""


def _connect(path: Path, timeout: float | None = None) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    sock.settimeout(None)
    return sock


def start(data_dir: Path, *, idle_seconds: float | None = None) -> subprocess.Popen:
    """Start a server for ``data_dir`` in its own session (it outlives the CLI); it
    stays idle ``idle_seconds``, else $HINDSIGHT_ASK_SERVER_IDLE, else IDLE_SECONDS."""
    # absolute: the server runs in the data folder, where a relative path would name
    # a folder inside it (its socket then never appeared where the CLI looked, and
    # every question waited for it before the CLI answered by itself)
    data_dir = Path(data_dir).resolve()
    if idle_seconds is None:
        try:
            idle_seconds = float(os.environ.get(IDLE_ENV) or IDLE_SECONDS)
        except ValueError:
            idle_seconds = IDLE_SECONDS
    log_file = open(Path(data_dir) / "ask-server.log", "ab")  # noqa: SIM115 - the child keeps it
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.Popen([sys.executable, "-m", "app.ask_server", str(data_dir), str(idle_seconds)],
                            stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file, start_new_session=True,
                            env=env, cwd=str(Path(data_dir)))


def ask(data_dir: Path, question: str, *, today: date | None = None, no_cache: bool = False,
        progress: Callable[[str], None] | None = None, start_server: bool = True,
        wait_seconds: float = START_SECONDS) -> dict | None:
    """The answer (``Answer.to_json()``) from the server for ``data_dir``, starting one
    if none runs; None when there is none and none could be started, or it died
    during the question: then the caller answers itself. A server's error for the
    question is raised (``UserError`` for a user's mistake, else RuntimeError)."""
    if os.environ.get(SERVER_ENV) == "0":
        return None
    path = socket_path(data_dir)
    sock = _connect(path)
    if sock is None:
        if not start_server:
            return None
        try:
            _private_folder(path.parent)
            child = start(data_dir)
        except OSError as exc:
            log.warning("cannot start the ask server: %s", exc)
            return None
        deadline = time.monotonic() + wait_seconds
        while sock is None and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.05)
            sock = _connect(path)
        if sock is None:
            log.warning("the ask server did not start (see %s)", Path(data_dir) / "ask-server.log")
            return None
    try:
        with sock:
            _send(sock, {"question": question, "today": today.isoformat() if today else None, "no_cache": no_cache})
            for line in sock.makefile("rb"):
                message = json.loads(line)
                if "progress" in message:
                    if progress:
                        progress(message["progress"])
                elif "answer" in message:
                    return message["answer"]
                elif "error" in message:
                    from app.errors import UserError

                    raise (UserError if message.get("user_error") else RuntimeError)(message["error"])
    except (ConnectionResetError, BrokenPipeError):
        pass
    log.warning("the ask server closed the connection before the answer; answering here")
    return None


def main(argv: list[str]) -> int:
    data_dir = Path(argv[0])
    idle = float(argv[1]) if len(argv) > 1 else IDLE_SECONDS
    from app import logs

    logs.setup(data_dir, False)
    server = AskServer(data_dir, idle_seconds=idle)
    # the models a question needs first, loaded before the first question arrives
    threading.Thread(target=_preload, args=(server,), daemon=True).start()
    server.serve()
    return 0


def _preload(server: AskServer) -> None:
    from models.registry import ModelMissing

    registry = server._models()
    for role in ("planner", "sparse_encoder", "embedder", "pattern_classifier", "event_classifier"):
        try:
            registry.get(role)
        except ModelMissing:
            return  # the question will say what to build
        except Exception:  # noqa: BLE001 - the question reports it
            log.exception("preloading %s", role)
            return


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
