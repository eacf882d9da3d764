"""llama-cpp-python loads its libraries with ctypes from ``llama_cpp/lib/``: they are
kept at that path. ``packaging/dist.py`` points HINDSIGHT_LLAMA_LIB at the libraries it
staged (llama.cpp with its CPU-variant modules, ``libggml-cpu-<tag>.so``, which the
planner loads from that same folder; or the portable build), so the bundle never
carries the build tuned to the packaging machine's CPU that ``make setup`` installs."""
import os
from pathlib import Path

from PyInstaller.utils.hooks import collect_dynamic_libs

_lib = os.environ.get("HINDSIGHT_LLAMA_LIB")
if _lib:
    binaries = [(str(p), "llama_cpp/lib") for p in sorted(Path(_lib).iterdir()) if ".so" in p.name]
    if not binaries:
        raise SystemExit(f"HINDSIGHT_LLAMA_LIB={_lib} holds no .so files")
else:
    binaries = collect_dynamic_libs("llama_cpp")
