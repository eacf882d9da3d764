"""``hindsight doctor``: check Python, packages, the store, every importer and
every model role, and say what to do about each problem."""
from __future__ import annotations

import importlib
import importlib.metadata as md
import logging
import os
import sys
from dataclasses import asdict, dataclass

import click

from app.errors import EXIT_USER
from app.shell import Ctx, common, print_json

log = logging.getLogger(__name__)


@dataclass
class Check:
    area: str
    name: str
    status: str  # ok | warn | fail
    detail: str
    fix: str = ""


# (distribution, pinned version or None, why we need it)
_PACKAGES = [
    ("duckdb", "1.5.5", "the event store"),
    ("pyarrow", None, "fast writes to the store"),
    ("ijson", None, "streaming JSON exports"),
    ("icalendar", None, "calendar imports"),
    ("recurring-ical-events", None, "calendar recurrences"),
    ("PySide6-Essentials", None, "the desktop app"),
]


def run_checks(data_dir) -> list[Check]:
    checks: list[Check] = []
    v = sys.version_info
    checks.append(Check("python", "version", "ok" if (v.major, v.minor) == (3, 11) else "warn",
                        sys.version.split()[0], "" if (v.major, v.minor) == (3, 11) else "Hindsight is tested on Python 3.11; run 'make setup'"))
    for dist, pin, why in _PACKAGES:
        try:
            have = md.version(dist)
        except md.PackageNotFoundError:
            checks.append(Check("packages", dist, "fail", f"not installed (needed for {why})", "run 'make setup'"))
            continue
        if pin and have != pin:
            checks.append(Check("packages", dist, "fail", f"{have} installed, {pin} required ({why})", "run 'make setup'"))
        else:
            checks.append(Check("packages", dist, "ok", have))
    try:
        import ijson

        if ijson.backend != "yajl2_c":
            checks.append(Check("packages", "ijson backend", "warn", f"{ijson.backend}: JSON imports will be slow",
                                "reinstall ijson from a binary wheel"))
    except ImportError:
        pass

    # the data dir and store
    from engine.store import store_path

    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        writable = os.access(data_dir, os.W_OK)
    except OSError as exc:
        writable = False
        checks.append(Check("store", "data dir", "fail", f"{data_dir}: {exc}", "pass --data-dir to a writable folder"))
    if writable:
        checks.append(Check("store", "data dir", "ok", str(data_dir)))
    path = store_path(data_dir)
    if not path.exists():
        checks.append(Check("store", "store file", "ok", f"{path} will be created on the first import"))
    else:
        checks.append(_store_check(path))
    checks.extend(_derived_checks(data_dir))

    # importers
    from engine.settings import Settings, SettingsError
    from importers.base import Entry
    from importers.registry import RegistryError, discover

    try:
        settings = Settings.load(data_dir)
        checks.append(Check("settings", "settings.json", "ok", f"home zone {settings.home_tz()}"))
    except SettingsError as exc:
        checks.append(Check("settings", "settings.json", "fail", str(exc), "fix it with 'hindsight settings'"))
    try:
        registry = discover()
    except (RegistryError, ImportError) as exc:
        checks.append(Check("importers", "registry", "fail", str(exc), "reinstall Hindsight ('make setup')"))
    else:
        probe = Entry.from_bytes("probe.bin", b"\x00" * 64)
        for imp in registry:
            try:
                imp.recognize(probe)
                checks.append(Check("importers", imp.name, "ok", imp.title))
            except Exception as exc:  # noqa: BLE001 - report, don't crash the doctor
                checks.append(Check("importers", imp.name, "fail", f"recognize() raised {exc!r}", "report this bug"))

    checks.extend(_planner_runtime())

    # model roles
    try:
        status_mod = importlib.import_module("models.status")
    except ImportError as exc:
        checks.append(Check("models", "model layer", "fail", f"not importable: {exc}", "run 'make setup'"))
    else:
        try:
            roles = status_mod.status()["roles"]
        except Exception as exc:  # noqa: BLE001
            checks.append(Check("models", "status", "fail", f"{type(exc).__name__}: {exc}", "run 'hindsight models build'"))
        else:
            from app.assemble import planner_kind, unused_roles
            from app.errors import UserError

            try:
                kind = planner_kind()
            except UserError as exc:
                kind = ""
                checks.append(Check("models", "planner in use", "fail", str(exc), "unset HINDSIGHT_PLANNER"))
            if kind:
                checks.append(Check("models", "planner in use", "ok", PLANNER_IN_USE[kind]))
            unused = unused_roles()
            for role, info in roles.items():
                if role in unused:
                    checks.append(Check("models", role, "ok", f"not used: {PLANNER_IN_USE[kind]}"))
                elif info.get("ready"):
                    checks.append(Check("models", role, "ok", f"{info.get('path')} ({info.get('source', '')})"))
                else:
                    checks.append(Check("models", role, "fail", info.get("error") or "missing",
                                        "run 'hindsight models build'"))
    return checks


PLANNER_IN_USE = {
    "tuned": "the fine-tuned planner, and the few-shot planner where its plan gives no answer",
    "tuned-only": "the fine-tuned planner alone (HINDSIGHT_PLANNER=tuned-only)",
    "fewshot": "the few-shot planner alone",
}


def _store_check(path) -> Check:
    """The store opens, and every block of its events and imports reads back whole."""
    from engine.derived import check_duckdb_file
    from engine.store import SCHEMA_VERSION, EventStore, StoreError

    try:
        with EventStore(path, read_only=True) as store:
            n = store.count()
            imports = len(store.imports())
    except StoreError as exc:
        # a store Hindsight wrote has schema 1 at least: "schema 0" is a file it cannot read
        if "another Hindsight process" in str(exc) or ("without read-only to migrate" in str(exc)
                                                         and "has schema 0," not in str(exc)):
            return Check("store", "store file", "fail", str(exc),
                         "close other Hindsight windows, or open the store once to migrate it")
        return _damaged_store(path, str(exc))
    except Exception as exc:  # noqa: BLE001 - a damaged file fails in many ways; report, don't crash
        return _damaged_store(path, f"{type(exc).__name__}: {exc}")
    problem = check_duckdb_file(path, ("events", "imports"))
    if problem is not None:
        return _damaged_store(path, problem)
    return Check("store", "store file", "ok", f"{path}: schema {SCHEMA_VERSION}, {n:,} events, {imports} imports")


def _damaged_store(path, detail: str) -> Check:
    backups = sorted(path.parent.glob(path.name + ".before-schema-*"))
    restore = (f"copy the backup {backups[-1]} over it, then import what came later again" if backups
               else "move it aside and import your exports again (they are the originals)")
    return Check("store", "store file", "fail", f"the store {path} is damaged: {detail}",
                 f"{restore}; nothing derived from it can be repaired until then")


def _derived_checks(data_dir) -> list[Check]:
    from engine.derived import registered

    checks = []
    for kind in registered():
        try:
            problem = kind.check(data_dir)
        except Exception as exc:  # noqa: BLE001 - a check that fails is itself a finding
            problem = f"its check failed: {type(exc).__name__}: {exc}"
        checks.append(Check("derived", kind.name, "fail" if problem else "ok", problem or f"{kind.title}: whole",
                            "run 'hindsight doctor --repair' to rebuild it from your events" if problem else ""))
    return checks


def repair(data_dir, open_store, names: set[str] | None = None) -> list[str]:
    """Rebuild from the events each kind of derived data whose check fails (or those
    in ``names``); returns what was done, one line each. Every check runs before
    ``open_store()`` opens the store for the rebuilds: a check reads the store's file
    on its own, and one process cannot open it twice."""
    from engine.derived import registered

    todo = [kind for kind in registered()
            if kind.check(data_dir) is not None or (names is not None and kind.name in names)]
    if not todo:
        return []
    store = open_store()
    done = []
    for kind in todo:
        try:
            done.append(f"{kind.name}: {kind.rebuild(store, data_dir)}")
        except Exception as exc:  # noqa: BLE001 - one kind that cannot be rebuilt must not stop the others
            log.warning("rebuilding %s failed", kind.name, exc_info=True)
            done.append(f"{kind.name}: not rebuilt: {exc}")
    return done


def _rebuild_search_index(store, data_dir) -> str:
    from app.assemble import refresh_index
    from engine.derived import remove_duckdb_file
    from engine.retrieval.index import index_path

    remove_duckdb_file(index_path(store.path))
    return refresh_index(store)


def _check_search_index(data_dir) -> str | None:
    from engine.derived import check_duckdb_file
    from engine.retrieval.index import index_path
    from engine.store import store_path

    return check_duckdb_file(index_path(store_path(data_dir)), ("docs", "doc_bags", "units", "unit_terms", "sparse_done", "meta"))


def _read_store(data_dir, read):
    """``read(store)`` over the store opened read-only; None without a store."""
    from engine.store import EventStore, store_path

    path = store_path(data_dir)
    if not path.exists():
        return None
    with EventStore(path, read_only=True) as store:
        return read(store)


def _stale_trees(store) -> tuple[int, int]:
    """(chat conversations, those whose tree is missing or older than their turns)."""
    from engine.chattree import tables
    from engine.chattree.conversations import conversation_hashes

    con = store.reader()
    hashes = conversation_hashes(con)
    stored = dict(con.execute("SELECT conversation_id, content_hash FROM chat_tree_conversations").fetchall()) \
        if tables.has_tables(con) else {}
    return len(hashes), (sum(1 for cid, (_src, digest) in hashes.items() if stored.get(cid) != digest)
                         + sum(1 for cid in stored if cid not in hashes))


def _check_chat_trees(data_dir) -> str | None:
    conversations, stale = _read_store(data_dir, _stale_trees) or (0, 0)
    return f"{stale:,} of {conversations:,} chat conversations have no tree, or a tree older than their turns" \
        if stale else None


def _rebuild_chat_trees(store, data_dir) -> str:
    from app.chattrees import rebuild_chat_trees

    stats = rebuild_chat_trees(store)
    return f"rebuilt the trees of {stats.built:,} conversations"


def _check_insights(data_dir) -> str | None:
    from app.insights import chats_without_insights

    without = _read_store(data_dir, chats_without_insights)
    return f"{without:,} chat conversations have no insights (summary, keywords, topic)" if without else None


def _rebuild_insights(store, data_dir) -> str:
    from app.insights import update_insights

    result = update_insights(store)
    return f"inferred the insights of {result.inferred:,} conversations" if result is not None else "nothing to do"


def _register_derived() -> None:
    from engine.derived import DerivedData, register

    register(DerivedData("search_index", "the search index", _check_search_index, _rebuild_search_index))
    # the trees and insights live in the store's own file: its check covers their blocks;
    # these say whether every conversation has them
    register(DerivedData("chat_trees", "the chat trees", _check_chat_trees, _rebuild_chat_trees))
    register(DerivedData("insights", "the chat insights", _check_insights, _rebuild_insights))


_register_derived()


def _planner_runtime() -> list[Check]:
    """Whether llama.cpp was built for this CPU: the portable build leaves AVX-512 and AMX
    unused (the planner reads prompts ~30% slower on our machines, and writes plans ~13%
    slower without AMX); 'make setup' builds it here."""
    try:
        from models.runtime.planner import instruction_sets

        used = instruction_sets()
    except Exception as exc:  # noqa: BLE001 - a missing or broken runtime is reported, not raised
        return [Check("models", "planner runtime", "fail", f"llama-cpp-python: {type(exc).__name__}: {exc}",
                      "run 'make setup'")]
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            flags = next((line.partition(":")[2].split() for line in f if line.startswith("flags")), [])
    except OSError:  # not Linux: nothing to compare with
        flags = []
    return [planner_runtime_check(used, set(flags))]


def planner_runtime_check(used: set[str], cpu_flags: set[str]) -> Check:
    listed = ", ".join(sorted(s for s in used if s.startswith(("AVX", "AMX", "F16C", "FMA")))) or "none listed"
    # (what the CPU needs for it, what llama.cpp lists when it uses it, its name)
    for needs, listed_as, name in (({"avx512f"}, "AVX512", "AVX-512"),
                                   ({"amx_tile", "amx_int8", "avx512_vnni"}, "AMX_INT8", "AMX")):
        if needs <= cpu_flags and listed_as not in used:
            return Check("models", "planner runtime", "warn",
                         f"llama.cpp uses {listed}, not the {name} this CPU has: plans are written more slowly",
                         "run 'make setup' (it builds llama.cpp for this CPU, once)")
    return Check("models", "planner runtime", "ok", f"llama.cpp uses {listed}")


@click.command("doctor")
@common
@click.option("--repair", is_flag=True,
              help="Rebuild damaged or missing derived data (search index, chat trees, insights) from your events.")
@click.pass_obj
def doctor(obj: Ctx, repair: bool) -> int:
    """Check that everything Hindsight needs is in place, and say what to do if not."""
    if repair:
        _run_repair(obj)
    checks = run_checks(obj.resolve())
    bad = [c for c in checks if c.status == "fail"]
    if obj.json:
        print_json({"ok": not bad, "checks": [asdict(c) for c in checks]})
    else:
        marks = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}
        area = None
        for c in checks:
            if c.area != area:
                area = c.area
                click.echo(f"\n{area}")
            click.echo(f"  {marks[c.status]} {c.name}: {c.detail}" + (f"\n       → {c.fix}" if c.fix and c.status != "ok" else ""))
        click.echo("\nAll good." if not bad else f"\n{len(bad)} problem(s) found.")
    return EXIT_USER if bad else 0


def _run_repair(obj: Ctx) -> None:
    from app.errors import UserError

    data_dir = obj.resolve()
    store_check = _store_check(store_path_of(data_dir)) if store_path_of(data_dir).exists() else None
    if store_check is not None and store_check.status == "fail":
        raise UserError(f"{store_check.detail}; {store_check.fix}")
    for line in repair(data_dir, obj.store):
        click.echo(f"repaired {line}", err=True)
    obj.close()


def store_path_of(data_dir):
    from engine.store import store_path

    return store_path(data_dir)
