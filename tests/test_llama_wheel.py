"""packaging/llama_wheel.py: llama.cpp built for the CPU it runs on, AMX patched for GCC 12, cached by content."""
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


def test_every_instruction_set_the_cpu_has_is_named(lw):
    args = lw.cmake_args(lw.cpu_flags(SAPPHIRE_RAPIDS))
    assert "-DGGML_NATIVE=OFF" in args  # -march=native would name sets this list does not know
    assert _on(args) == {"GGML_SSE42", "GGML_AVX", "GGML_AVX2", "GGML_FMA", "GGML_F16C", "GGML_BMI2",
                         "GGML_AVX_VNNI", "GGML_AVX512", "GGML_AVX512_VBMI", "GGML_AVX512_VNNI",
                         "GGML_AVX512_BF16", "GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16"}
    assert lw.uses_amx(args)
    assert not lw.uses_amx(lw.without_amx(args))
    assert _on(lw.without_amx(args)) == _on(args) - {"GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16"}


def test_amx_needs_avx512_vnni_and_both_tile_sets(lw):
    no_vnni = SAPPHIRE_RAPIDS.replace(" avx512_vnni", "")
    assert not lw.uses_amx(lw.cmake_args(lw.cpu_flags(no_vnni)))
    no_int8 = SAPPHIRE_RAPIDS.replace(" amx_int8", "")
    assert not {"GGML_AMX_TILE", "GGML_AMX_BF16"} & _on(lw.cmake_args(lw.cpu_flags(no_int8)))


def test_the_amx_patch_loads_the_whole_tile_configuration_every_time(lw, tmp_path):
    source = tmp_path / lw.AMX_SOURCE
    source.parent.mkdir(parents=True)
    original = "".join(old for old, _ in lw.AMX_PATCHES)
    source.write_text("inline void init() {\n" + original + "}\n")
    lw.patch_amx(tmp_path)
    text = source.read_text()
    assert "done" not in text and "return;" not in text  # no more loading once per thread
    assert text.index("__asm__ __volatile__") < text.index("_tile_loadconfig(&tc);")
    with pytest.raises(lw.PatchMissing):  # patched already, or a release without those lines
        lw.patch_amx(tmp_path)
    with pytest.raises(lw.PatchMissing):
        lw.patch_amx(tmp_path / "elsewhere")


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
    patched = lw.build_key("0.3.36", a)
    lw.AMX_PATCHES, saved = (("a", "b"),), lw.AMX_PATCHES
    try:
        assert lw.build_key("0.3.36", a) != patched  # the patch decides the bytes too
    finally:
        lw.AMX_PATCHES = saved


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


def test_a_release_without_the_amx_line_is_built_without_amx(lw, tmp_path, monkeypatch, capsys):
    import platform

    if sys.platform != "linux" or platform.machine() != "x86_64":
        pytest.skip("the tuned build is for Linux on x86-64")
    monkeypatch.setenv("HINDSIGHT_CACHE_DIR", str(tmp_path))
    sapphire = lw.cpu_flags(SAPPHIRE_RAPIDS)
    monkeypatch.setattr(lw, "cpu_flags", lambda _text: sapphire)
    built = []

    def build(version, args, out):
        if lw.uses_amx(args):
            raise lw.PatchMissing("no line to patch")
        built.append(args)
        out.mkdir(parents=True)
        wheel = out / f"llama_cpp_python-{version}-py3-none-linux_x86_64.whl"
        wheel.write_bytes(b"PK")
        return wheel

    monkeypatch.setattr(lw, "build", build)
    assert lw.main([str(ROOT / "requirements-models.txt")]) == 0
    assert len(built) == 1 and not lw.uses_amx(built[0]) and "GGML_AVX512_VNNI" in _on(built[0])
    captured = capsys.readouterr()
    assert captured.out.strip().endswith(".whl") and "building without AMX" in captured.err
