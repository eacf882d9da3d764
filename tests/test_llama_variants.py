"""packaging/llama_variants.py: the bundle's llama.cpp with one CPU backend per CPU
generation, AMX patched, cached by content; dist.py ships it unless told otherwise."""
from __future__ import annotations

import importlib.util
import io
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def lv():
    sys.path.insert(0, str(ROOT / "packaging"))
    spec = importlib.util.spec_from_file_location("llama_variants", ROOT / "packaging" / "llama_variants.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_build_asks_for_every_variant_and_no_native_code(lv):
    args = lv.CMAKE_ARGS
    assert {"-DGGML_NATIVE=OFF", "-DGGML_BACKEND_DL=ON", "-DGGML_CPU_ALL_VARIANTS=ON"} <= set(args)
    assert "-DCMAKE_INSTALL_RPATH=$ORIGIN" in args  # the bundle is unpacked anywhere


def test_the_key_follows_what_decides_the_bytes(lv):
    key = lv.build_key("0.3.36", lv.CMAKE_ARGS)
    assert key == lv.build_key("0.3.36", list(lv.CMAKE_ARGS))
    assert key != lv.build_key("0.3.37", lv.CMAKE_ARGS)
    assert key != lv.build_key("0.3.36", [*lv.CMAKE_ARGS, "-DGGML_OPENMP=OFF"])
    saved = lv.llama_wheel.AMX_PATCHES
    lv.llama_wheel.AMX_PATCHES = (("a", "b"),)
    try:
        assert lv.build_key("0.3.36", lv.CMAKE_ARGS) != key  # the sapphirerapids module carries the patch
    finally:
        lv.llama_wheel.AMX_PATCHES = saved


def test_a_cached_build_is_used_without_building(lv, tmp_path, monkeypatch):
    monkeypatch.setenv("HINDSIGHT_CACHE_DIR", str(tmp_path))
    folder = lv.cache_folder("0.3.36", lv.CMAKE_ARGS)
    folder.mkdir(parents=True)
    for name in (*lv.BASE_LIBRARIES, "libggml-cpu-haswell.so"):
        (folder / name).write_bytes(b"\x7fELF")

    def no_build(*_a, **_k):
        raise AssertionError("built although the cache had the libraries")

    monkeypatch.setattr(lv, "build", no_build)
    assert lv.cached_or_built("0.3.36", log=lambda _m: None) == folder
    (folder / "libggml-cpu-haswell.so").unlink()  # a folder without variants is no build
    with pytest.raises(AssertionError, match="built although"):
        lv.cached_or_built("0.3.36", log=lambda _m: None)


def _fake_release(lv, monkeypatch, amx_source: str, made: list[str]):
    """pip download gives a source release; cmake 'builds' the files ``made`` into bin/."""
    def pip(*args, env=None):
        dest = Path(args[args.index("-d") + 1])
        dest.mkdir(parents=True)
        with tarfile.open(dest / "llama_cpp_python-0.3.36.tar.gz", "w:gz") as tar:
            data = amx_source.encode()
            info = tarfile.TarInfo(f"llama_cpp_python-0.3.36/{lv.llama_wheel.AMX_SOURCE}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

    def run(cmd, step, log):
        if step == "cmake build":
            bin_dir = Path(cmd[cmd.index("--build") + 1]) / "bin"
            bin_dir.mkdir(parents=True)
            for name in made:
                target, _, real = name.partition("->")
                if real:
                    (bin_dir / target).symlink_to(real)
                else:
                    (bin_dir / target).write_bytes(target.encode())

    monkeypatch.setattr(lv.llama_wheel, "_pip", pip)
    monkeypatch.setattr(lv, "_run", run)
    monkeypatch.setattr(lv.shutil, "which", lambda name: f"/usr/bin/{name}")


def _amx_text(lv) -> str:
    return "void init() {\n" + "".join(old for old, _ in lv.llama_wheel.AMX_PATCHES) + "}\n"


def test_the_build_keeps_the_base_libraries_by_the_names_loaded_and_every_variant(lv, tmp_path, monkeypatch):
    made = ["libllama.so.0.5.0", "libllama.so.0->libllama.so.0.5.0", "libllama.so->libllama.so.0",
            "libggml.so.0.25.3", "libggml.so.0->libggml.so.0.25.3", "libggml-base.so.0.25.3",
            "libggml-base.so.0->libggml-base.so.0.25.3", "libggml-cpu-haswell.so", "libggml-cpu-zen4.so"]
    _fake_release(lv, monkeypatch, _amx_text(lv), made)
    out = lv.build("0.3.36", lv.CMAKE_ARGS, tmp_path / "cache" / "lib", log=lambda _m: None)
    kept = sorted(p.name for p in out.iterdir())
    assert kept == ["cmake-args.txt", "libggml-base.so.0", "libggml-cpu-haswell.so", "libggml-cpu-zen4.so",
                    "libggml.so.0", "libllama.so"]
    assert not any(p.is_symlink() for p in out.iterdir())
    assert (out / "libllama.so").read_bytes() == b"libllama.so.0.5.0"
    assert lv.variant_tags(out) == ["haswell", "zen4"]


def test_a_build_without_variants_or_without_the_amx_lines_fails(lv, tmp_path, monkeypatch):
    _fake_release(lv, monkeypatch, _amx_text(lv), ["libllama.so", "libggml.so.0", "libggml-base.so.0",
                                                    "libggml-cpu.so"])
    with pytest.raises(lv.BuildFailed, match="no libggml-cpu-"):
        lv.build("0.3.36", lv.CMAKE_ARGS, tmp_path / "a", log=lambda _m: None)
    assert not (tmp_path / "a").exists()  # made whole or not at all
    _fake_release(lv, monkeypatch, "another release\n", ["libllama.so"])
    with pytest.raises(lv.BuildFailed, match="AMX"):
        lv.build("0.3.36", lv.CMAKE_ARGS, tmp_path / "b", log=lambda _m: None)


def test_without_cmake_the_message_says_what_to_install(lv, tmp_path, monkeypatch):
    monkeypatch.setattr(lv.shutil, "which", lambda _name: None)
    with pytest.raises(lv.BuildFailed, match="cmake is not installed"):
        lv.build("0.3.36", lv.CMAKE_ARGS, tmp_path / "out", log=lambda _m: None)


@pytest.fixture
def dist(lv):
    spec = importlib.util.spec_from_file_location("dist", ROOT / "packaging" / "dist.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("env, expected", [({}, "cpu-variants"), ({"HINDSIGHT_DIST_LLAMA": "portable"}, "portable"),
                                           ({"HINDSIGHT_LLAMA_WHEEL": "/w/llama_cpp_python-0.3.36-x.whl"},
                                            "portable")])
def test_the_bundle_ships_the_variants_unless_told_otherwise(dist, tmp_path, monkeypatch, env, expected):
    for name in ("HINDSIGHT_DIST_LLAMA", "HINDSIGHT_LLAMA_WHEEL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(dist, "portable_llama", lambda stage: (stage / "portable", "sha-p"))
    monkeypatch.setattr(dist, "variant_llama", lambda stage: (stage / "cpu-variants", "sha-v"))
    folder, _digest, build = dist.stage_llama(tmp_path)
    assert build == expected and folder.name == expected


def test_an_unknown_llama_choice_is_refused(dist, tmp_path, monkeypatch):
    monkeypatch.setenv("HINDSIGHT_DIST_LLAMA", "native")
    with pytest.raises(dist.DistError, match="cpu-variants .* or portable"):
        dist.stage_llama(tmp_path)
