"""llama.cpp's CPU backend where the build ships one per CPU generation.

The desktop bundle's llama.cpp is built with ``GGML_BACKEND_DL`` and
``GGML_CPU_ALL_VARIANTS`` (``packaging/llama_variants.py``): its ``libggml.so`` holds no
CPU code, and ``libggml-cpu-<tag>.so`` beside it (``haswell``, ``skylakex``, ``zen4``,
...) each hold the kernels for one generation. ggml scores every module against this
CPU and loads the best, so one package uses AVX-512 where the CPU has it and never
executes an instruction an older CPU lacks. ggml itself looks for the modules only
beside the executable and in the working directory, neither of which is
``llama_cpp/lib/``: :func:`load_cpu_backend` names that folder.

A build with its backends linked in (``make setup``'s, pip's) has them registered
from the start; then nothing here loads anything. Nothing here may import the app.
"""
from __future__ import annotations

import ctypes
import logging
import re
import threading
from pathlib import Path

log = logging.getLogger(__name__)

VARIANT_PREFIX = "libggml-cpu-"  # what ggml's loader looks for: [lib]ggml-cpu-*.so


class LlamaBackendMissing(RuntimeError):
    """llama.cpp was built with loadable backends and none loads here; the message
    names the folder."""


def variant_modules(folder: Path) -> list[Path]:
    """The CPU-variant modules in ``folder`` (``libggml-cpu-<tag>.so``), sorted."""
    try:
        return sorted(p for p in folder.iterdir() if p.name.startswith(VARIANT_PREFIX) and p.suffix == ".so")
    except OSError:
        return []


def variant_tag(path: str | Path) -> str:
    """``haswell`` for ``.../libggml-cpu-haswell.so``; '' for anything else."""
    name = Path(path).name
    return name[len(VARIANT_PREFIX):-len(".so")] if name.startswith(VARIANT_PREFIX) and name.endswith(".so") else ""


def _loaded_tags(folder: Path) -> list[str]:
    """The variant modules of ``folder`` mapped into this process (Linux; [] elsewhere)."""
    try:
        maps = Path("/proc/self/maps").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    prefix = re.escape(str(folder.resolve()) + "/" + VARIANT_PREFIX)
    return sorted({variant_tag(m) for m in re.findall(rf"{prefix}[^/\s]+\.so", maps)})


_loaded: dict[str, str] = {}  # folder -> the tag loaded from it
_lock = threading.Lock()  # the Ask pane and the Insights tab may open a model at once


def load_cpu_backend(folder: Path | None = None, lib=None) -> str | None:
    """Load the CPU variant of llama.cpp that suits this CPU, from ``folder`` (default:
    the folder llama-cpp-python loads ``libllama.so`` from); must run before the first
    model is opened. Returns the variant's tag ('' where it cannot be told), or None
    where the build has its backends already (nothing loaded). ``lib`` is the ctypes
    library to call (default: llama-cpp-python's ``libllama``, whose dependency
    ``libggml`` holds the loader). Raises :class:`LlamaBackendMissing` where the build
    needs a module and none loads."""
    if lib is None or folder is None:
        from llama_cpp import llama_cpp as raw

        lib = raw._lib if lib is None else lib
        folder = Path(raw._base_path) if folder is None else folder
    folder = Path(folder)
    with _lock:
        if str(folder) not in _loaded:
            tag = _load(folder, lib)
            if tag is None:
                return None
            _loaded[str(folder)] = tag
        return _loaded[str(folder)]


def _load(folder: Path, lib) -> str | None:
    lib.ggml_backend_reg_count.restype = ctypes.c_size_t
    lib.ggml_backend_reg_count.argtypes = []
    if lib.ggml_backend_reg_count() > 0:
        return None  # linked in, or loaded already
    modules = variant_modules(folder)
    if not modules:
        raise LlamaBackendMissing(
            f"llama.cpp in {folder} was built with loadable backends (GGML_BACKEND_DL) but that folder holds no "
            f"{VARIANT_PREFIX}*.so module: reinstall Hindsight")
    lib.ggml_backend_load_all_from_path.restype = None
    lib.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
    lib.ggml_backend_load_all_from_path(str(folder).encode())
    if lib.ggml_backend_reg_count() == 0:
        raise LlamaBackendMissing(
            f"none of the {len(modules)} CPU variants of llama.cpp in {folder} "
            f"({', '.join(variant_tag(m) for m in modules)}) loads on this CPU: reinstall Hindsight, or report the "
            "CPU model (/proc/cpuinfo)")
    tags = _loaded_tags(folder)
    tag = tags[0] if len(tags) == 1 else ""
    log.info("llama.cpp CPU backend: %s, from %s", tag or "a variant", folder)
    return tag
