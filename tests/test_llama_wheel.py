"""packaging/llama_wheel.py: llama.cpp built for the CPU it runs on, never with AMX, cached by content."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def lw():
    spec = importlib.util.spec_from_file_location("llama_wheel", ROOT / "packaging" / "llama_wheel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SAPPHIRE_RAPIDS = ("flags\t\t: fpu sse4_2 avx f16c fma bmi2 avx2 avx512f avx512dq avx512cd avx512bw avx512vl "
                   "avx512vbmi avx512_vnni avx512_bf16 avx_vnni amx_bf16 amx_tile amx_int8\n")


def _on(args):
    return {a[2:-3] for a in args if a.endswith("=ON")}


def test_every_instruction_set_the_cpu_has_is_named_and_amx_never(lw):
    args = lw.cmake_args(lw.cpu_flags(SAPPHIRE_RAPIDS))
    assert "-DGGML_NATIVE=OFF" in args  # -march=native would switch AMX on
    assert _on(args) == {"GGML_SSE42", "GGML_AVX", "GGML_AVX2", "GGML_FMA", "GGML_F16C", "GGML_BMI2",
                         "GGML_AVX_VNNI", "GGML_AVX512", "GGML_AVX512_VBMI", "GGML_AVX512_VNNI",
                         "GGML_AVX512_BF16"}
    assert {"-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF"} <= set(args)


def test_an_avx2_cpu_gets_no_avx512_and_an_avx512_extension_alone_is_not_enough(lw):
    avx2 = lw.cmake_args(lw.cpu_flags("flags : sse4_2 avx avx2 fma f16c bmi2\n"))
    assert _on(avx2) == {"GGML_SSE42", "GGML_AVX", "GGML_AVX2", "GGML_FMA", "GGML_F16C", "GGML_BMI2"}
    # VNNI listed without the AVX-512 foundation (as some hypervisors mask it) is no AVX-512 build
    odd = lw.cmake_args(lw.cpu_flags("flags : avx avx2 fma f16c avx512_vnni avx512f\n"))
    assert "GGML_AVX512" not in _on(odd) and "GGML_AVX512_VNNI" not in _on(odd)


def test_the_pin_is_read_from_the_requirements(lw, tmp_path):
    req = tmp_path / "r.txt"
    req.write_text("# a comment\ntorch==2.13.0\nllama-cpp-python==0.3.36  # built here\n")
    assert lw.pinned_version(req) == "0.3.36"
    req.write_text("torch==2.13.0\n")
    with pytest.raises(SystemExit, match="pins no llama-cpp-python"):
        lw.pinned_version(req)
    assert lw.pinned_version(ROOT / "requirements-models.txt")  # the real file pins it


def test_the_key_follows_what_decides_the_bytes(lw):
    a = lw.cmake_args(lw.cpu_flags(SAPPHIRE_RAPIDS))
    b = lw.cmake_args(lw.cpu_flags("flags : sse4_2 avx avx2 fma f16c bmi2\n"))
    assert lw.build_key("0.3.36", a) == lw.build_key("0.3.36", a)
    assert len({lw.build_key("0.3.36", a), lw.build_key("0.3.36", b), lw.build_key("0.3.37", a)}) == 3


@pytest.mark.skipif(sys.platform != "linux", reason="the tuned build is for Linux on x86-64")
def test_a_cached_wheel_is_printed_without_building(lw, tmp_path, monkeypatch, capsys):
    import platform

    if platform.machine() != "x86_64":
        pytest.skip("the tuned build is for x86-64")
    monkeypatch.setenv("HINDSIGHT_CACHE_DIR", str(tmp_path))
    version = lw.pinned_version(ROOT / "requirements-models.txt")
    args = lw.cmake_args(lw.cpu_flags(Path("/proc/cpuinfo").read_text()))
    folder = tmp_path / "wheels" / f"llama-cpp-python-{version}-{lw.build_key(version, args)}"
    folder.mkdir(parents=True)
    wheel = folder / f"llama_cpp_python-{version}-py3-none-linux_x86_64.whl"
    wheel.write_bytes(b"PK")

    def no_build(*_a, **_k):
        raise AssertionError("built although the cache had the wheel")

    monkeypatch.setattr(lw, "build", no_build)
    assert lw.main([str(ROOT / "requirements-models.txt")]) == 0
    assert capsys.readouterr().out.strip() == str(wheel)


def test_a_failed_build_says_what_is_missing_and_exits_1(lw, tmp_path, monkeypatch, capsys):
    import platform
    import subprocess

    if sys.platform != "linux" or platform.machine() != "x86_64":
        pytest.skip("the tuned build is for Linux on x86-64")
    monkeypatch.setenv("HINDSIGHT_CACHE_DIR", str(tmp_path))

    def failing(*_a, **_k):
        raise subprocess.CalledProcessError(1, ["pip", "wheel"])

    monkeypatch.setattr(lw, "build", failing)
    assert lw.main([str(ROOT / "requirements-models.txt")]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing for the Makefile to install
    assert "C++ compiler and CMake" in captured.err
