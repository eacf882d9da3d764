"""The background process that keeps models loaded for ``hindsight ask``: only its
user can reach it, it exits when idle, and the CLI answers by itself when it is
gone."""
from __future__ import annotations

import os
import socket
import stat
import threading
import time

import pytest

from app import ask_server
from engine.ingest import import_paths
from engine.store import EventStore, store_path
from tests.test_gui import SPOTIFY, FakeEngine


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    d = tmp_path / "data"
    d.mkdir()
    with EventStore(store_path(d)) as store:
        import_paths(store, [SPOTIFY])
    return d


class Models:
    def __init__(self):
        self.closed = False

    def close(self):
        self.closed = True


def serve(data_dir, **kw) -> tuple[ask_server.AskServer, threading.Thread]:
    kw.setdefault("make_engine", lambda store, settings, d, *, models, use_plan_cache: FakeEngine(store))
    server = ask_server.AskServer(data_dir, registry=Models(), **kw)
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.path.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return server, thread


def test_only_its_user_can_reach_the_server_and_it_answers(data_dir):
    server, thread = serve(data_dir)
    try:
        mode = os.stat(server.path).st_mode
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
        assert stat.S_IMODE(os.stat(server.path.parent).st_mode) == 0o700
        said: list[str] = []
        answer = ask_server.ask(data_dir, "How many Spotify events do I have?", progress=said.append,
                                start_server=False)
        assert answer["answer_text"] == "You have 10 Spotify events." and answer["ok"]
        assert said[0] == "Planning step 1: FILTER source = 'spotify'"
        # the store is not held between questions: another process may import
        with EventStore(store_path(data_dir)) as store:
            assert store.count() == 10
    finally:
        server.stop()
        thread.join(5)


def test_a_folder_others_can_enter_is_closed_before_the_socket_goes_in(data_dir):
    folder = ask_server.socket_path(data_dir).parent
    folder.mkdir(parents=True)
    os.chmod(folder, 0o777)
    server, thread = serve(data_dir)
    try:
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    finally:
        server.stop()
        thread.join(5)


def test_the_server_exits_when_idle_and_removes_its_socket(data_dir):
    server, thread = serve(data_dir, idle_seconds=1.0)
    assert ask_server.ask(data_dir, "How many?", start_server=False)["ok"]
    thread.join(10)
    assert not thread.is_alive() and not server.path.exists()
    assert server.answered == 1 and server._registry.closed  # the models are released with it
    # nobody listens now: a client that may not start one answers by itself
    assert ask_server.ask(data_dir, "How many?", start_server=False) is None


def test_a_server_that_dies_during_the_question_leaves_the_answer_to_the_cli(data_dir):
    """A socket that accepts and closes, as a killed server's would: no answer, no
    exception; the CLI then answers in its own process."""
    path = ask_server.socket_path(data_dir)
    ask_server._private_folder(path.parent)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)

    def die():
        conn, _ = listener.accept()
        conn.recv(1000)
        conn.sendall(b'{"progress": "Planning step 1"}\n')
        conn.close()

    threading.Thread(target=die, daemon=True).start()
    try:
        assert ask_server.ask(data_dir, "How many?", start_server=False) is None
    finally:
        listener.close()
    # a stale socket file left by a killed server: nobody answers, no exception
    assert path.exists() and ask_server.ask(data_dir, "How many?", start_server=False) is None


def test_a_question_the_server_cannot_answer_is_a_users_error_not_a_crash(tmp_path, monkeypatch):
    from app.errors import UserError

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    empty = tmp_path / "empty"
    empty.mkdir()
    server, thread = serve(empty)
    try:
        with pytest.raises(UserError, match="^no events yet"):
            ask_server.ask(empty, "How many?", start_server=False)
        assert thread.is_alive(), "one question's failure does not end the server"
    finally:
        server.stop()
        thread.join(5)


def test_the_cli_answers_by_itself_when_no_server_can_be_used(data_dir, monkeypatch):
    from click.testing import CliRunner

    import app.assemble
    from app.cli import main

    monkeypatch.setenv("HINDSIGHT_DATA_DIR", str(data_dir))
    (data_dir / "settings.json").write_text('{"home_timezone": "Europe/Berlin"}')
    monkeypatch.setattr(app.assemble, "build_engine", lambda store, settings, d, use_plan_cache: FakeEngine(store))
    monkeypatch.setattr(ask_server, "start", lambda data_dir: (_ for _ in ()).throw(OSError("no fork here")))
    result = CliRunner().invoke(main, ["ask", "How many Spotify events do I have?"], catch_exceptions=False)
    assert result.exit_code == 0 and result.stdout.startswith("You have 10 Spotify events.")
    result = CliRunner().invoke(main, ["ask", "--no-server", "--json", "How many?"], catch_exceptions=False)
    assert result.exit_code == 0 and '"answer": 10' in result.stdout


def test_a_server_started_for_a_relative_data_folder_is_given_its_absolute_path(tmp_path, monkeypatch):
    """The server runs in the data folder: given "data" it would look for "data/data".
    Its socket then never appeared where the CLI looked, and each question waited."""
    started: list = []

    class Popen:
        def __init__(self, argv, **kw):
            started.append((argv, kw))

    monkeypatch.setattr(ask_server.subprocess, "Popen", Popen)
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path)
    ask_server.start(ask_server.Path("data"), idle_seconds=5)
    (argv, kw), = started
    assert argv[-2] == str(tmp_path / "data") and kw["cwd"] == str(tmp_path / "data")
    assert ask_server.socket_path(ask_server.Path("data")) == ask_server.socket_path(tmp_path / "data")
