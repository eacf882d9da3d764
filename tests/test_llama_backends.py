"""models/runtime/llama_backends.py: the desktop bundle's llama.cpp loads the CPU variant
that suits the CPU from its own folder; a build with its backends linked in is left alone."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from models.runtime import llama_backends
from models.runtime.llama_backends import LlamaBackendMissing, load_cpu_backend, variant_tag

ROOT = Path(__file__).resolve().parents[1]


def fake_ggml(registered: int, loads: bool = True):
    """ggml's registry as ctypes shows it: plain functions (ctypes sets restype on them)."""
    calls: list[bytes] = []
    state = {"n": registered}

    def ggml_backend_reg_count():
        return state["n"]

    def ggml_backend_load_all_from_path(path: bytes):
        calls.append(path)
        if loads:
            state["n"] += 1

    lib = type("Lib", (), {})()
    lib.ggml_backend_reg_count = ggml_backend_reg_count
    lib.ggml_backend_load_all_from_path = ggml_backend_load_all_from_path
    return lib, calls


def _folder(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "llama_cpp" / "lib"
    folder.mkdir(parents=True)
    for name in ("libllama.so", "libggml.so.0", "libggml-base.so.0", *names):
        (folder / name).write_bytes(b"\x7fELF")
    return folder


def test_a_build_with_its_backends_linked_in_is_left_alone(tmp_path):
    lib, calls = fake_ggml(registered=1)
    assert load_cpu_backend(_folder(tmp_path, "libggml-cpu-haswell.so"), lib) is None
    assert calls == []


def test_the_variants_are_loaded_from_the_library_folder_once(tmp_path, monkeypatch):
    folder = _folder(tmp_path, "libggml-cpu-haswell.so", "libggml-cpu-zen4.so")
    monkeypatch.setattr(llama_backends, "_loaded_tags", lambda f: ["zen4"] if f == folder else [])
    lib, calls = fake_ggml(registered=0)
    assert load_cpu_backend(folder, lib) == "zen4"
    assert load_cpu_backend(folder, lib) == "zen4"
    assert calls == [str(folder).encode()]


def test_a_variant_build_without_its_modules_says_so(tmp_path):
    folder = _folder(tmp_path, "libggml-cpu.so.0")  # a base library, no variant module
    lib, calls = fake_ggml(registered=0)
    with pytest.raises(LlamaBackendMissing, match=f"{folder}.*no libggml-cpu-\\*.so module"):
        load_cpu_backend(folder, lib)
    assert calls == []


def test_no_variant_that_loads_names_the_variants_there(tmp_path):
    folder = _folder(tmp_path, "libggml-cpu-skylakex.so", "libggml-cpu-zen4.so")
    lib, calls = fake_ggml(registered=0, loads=False)
    with pytest.raises(LlamaBackendMissing, match="none of the 2 CPU variants .*skylakex, zen4"):
        load_cpu_backend(folder, lib)
    assert len(calls) == 1


@pytest.mark.parametrize("name, tag", [("libggml-cpu-haswell.so", "haswell"), ("libggml-cpu-x64.so", "x64"),
                                       ("libggml-cpu.so", ""), ("libggml-cpu-haswell.so.0", ""),
                                       ("libggml-base.so", "")])
def test_the_variant_tag_is_read_from_the_module_name(name, tag):
    assert variant_tag(f"/x/{name}") == tag


def _variant_build() -> Path | None:
    sys.path.insert(0, str(ROOT / "packaging"))
    try:
        import llama_variants
        import llama_wheel
    finally:
        sys.path.remove(str(ROOT / "packaging"))
    folder = llama_variants.cache_folder(llama_wheel.pinned_version(ROOT / "requirements-models.txt"),
                                         llama_variants.CMAKE_ARGS)
    return folder if llama_variants.variant_tags(folder) else None


@pytest.mark.slow
def test_the_real_variant_build_loads_the_variant_this_cpu_calls_for():
    folder = _variant_build()
    if folder is None:
        pytest.skip("llama.cpp with CPU variants is not built here (`make dist` builds it)")
    script = ("from models.runtime.llama_backends import load_cpu_backend\n"
              "from models.runtime.planner import instruction_sets\n"
              "print(load_cpu_backend()); print(' '.join(sorted(instruction_sets())))\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env=dict(os.environ, LLAMA_CPP_LIB_PATH=str(folder)))
    assert proc.returncode == 0, proc.stderr[-2000:]
    tag, sets = proc.stdout.split("\n")[:2]
    flags = set(next(line for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("flags")).partition(":")[2].split())
    assert tag and ("AVX2" in sets.split()) == ("avx2" in flags)
    assert ("AVX512" in sets.split()) == ("avx512f" in flags)  # the AVX-512 variant where the CPU has it
