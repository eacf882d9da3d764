"""Build llama.cpp for the desktop bundle with one CPU backend per CPU generation, once,
and keep the libraries.

The bundle runs on CPUs we never see, so its llama.cpp must not execute an instruction
the CPU lacks; the portable build (AVX2 only, ``dist.PORTABLE_LLAMA_ARGS``) gets that by
leaving AVX-512 unused everywhere. ggml's ``GGML_BACKEND_DL`` + ``GGML_CPU_ALL_VARIANTS``
instead builds its CPU code once per generation (``libggml-cpu-haswell.so``,
``-skylakex``, ``-zen4``, ``-sapphirerapids``, ...) beside base libraries that hold none;
at run time ggml scores each module against the CPU and loads the best
(``models/runtime/llama_backends.py`` points it at the folder). llama-cpp-python's own
CMake does not install those modules into its wheel, so this builds the vendored
llama.cpp of its pinned source release directly, only the shared libraries (no
examples, tools, tests or server: ~10 min on 2 cores).

The ``sapphirerapids`` module holds llama.cpp's AMX kernels, which GCC 12 miscompiles:
the AMX patch of ``llama_wheel.py`` is applied here too, and a release without its lines
fails the build rather than shipping kernels that fault.

The libraries are kept under the user cache keyed by everything that decides their
bytes (the version, the CMake arguments, the patch, the compiler), as ``llama_wheel``
keeps its wheels. Runs before the project is installed: standard library only.
"""
from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import llama_wheel

LAYOUT = "1"  # bump when the files kept from a build change
CMAKE_ARGS = [
    "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=ON",
    "-DGGML_NATIVE=OFF", "-DGGML_BACKEND_DL=ON", "-DGGML_CPU_ALL_VARIANTS=ON",
    "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_TOOLS=OFF", "-DLLAMA_BUILD_SERVER=OFF",
    "-DLLAMA_BUILD_COMMON=OFF", "-DLLAMA_CURL=OFF",
    # the libraries find each other in their own folder, wherever the bundle is unpacked
    "-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON", "-DCMAKE_INSTALL_RPATH=$ORIGIN",
]
# What llama-cpp-python opens (libllama.so) and the sonames it and the modules need;
# the modules are every libggml-cpu-<tag>.so the build made.
BASE_LIBRARIES = ("libllama.so", "libggml.so.0", "libggml-base.so.0")
VARIANT_PREFIX = "libggml-cpu-"


class BuildFailed(RuntimeError):
    """The source release could not be built; the message says which step."""


def variant_tags(folder: Path) -> list[str]:
    """The CPU variants a library folder holds (``haswell``, ``zen4``, ...), sorted."""
    return sorted(p.name[len(VARIANT_PREFIX):-len(".so")] for p in folder.glob(f"{VARIANT_PREFIX}*.so"))


def build_key(version: str, args: list[str]) -> str:
    patch = [text for pair in llama_wheel.AMX_PATCHES for text in pair]
    text = "\n".join([llama_wheel.PACKAGE, version, LAYOUT, *args, *patch, llama_wheel._compiler(),
                      platform.machine()])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def cache_folder(version: str, args: list[str]) -> Path:
    return llama_wheel.cache_root() / "llama-variants" / f"{llama_wheel.PACKAGE}-{version}-{build_key(version, args)}"


def digest(folder: Path) -> str:
    """One sha256 over the names and bytes of a library folder (the bundle's cache key)."""
    h = hashlib.sha256()
    for p in sorted(folder.glob("*.so*")):
        h.update(p.name.encode())
        h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def _run(cmd: list[str], step: str, log: Path) -> None:
    with open(log, "ab") as out:
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-2000:]
        raise BuildFailed(f"{step} failed ({proc.returncode}): {' '.join(cmd)}\n{tail}")


def build(version: str, args: list[str], out: Path, log=print) -> Path:
    """Download the source release, build its llama.cpp with ``args`` and keep the
    libraries in ``out`` (made whole or not at all)."""
    cmake = shutil.which("cmake")
    if cmake is None:
        raise BuildFailed("cmake is not installed (Debian: apt-get install cmake g++)")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".building-") as tmp:
        src = Path(tmp) / "src"
        try:
            llama_wheel._pip("download", "-q", "--no-deps", "--no-binary", ":all:",
                             f"{llama_wheel.PACKAGE}=={version}", "-d", str(src))
        except subprocess.CalledProcessError as exc:
            raise BuildFailed(f"pip could not download the {llama_wheel.PACKAGE} {version} source ({exc})") from None
        tree = Path(tmp) / "tree"
        with tarfile.open(next(src.iterdir())) as tar:
            tar.extractall(tree, filter="data")
        tree = next(tree.iterdir())  # the release's own top folder
        try:
            llama_wheel.patch_amx(tree)
        except llama_wheel.PatchMissing as exc:
            raise BuildFailed(f"{exc}: the sapphirerapids variant would carry GCC 12's broken AMX code") from None
        build_dir, build_log = Path(tmp) / "build", Path(tmp) / "build.log"
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
        log(f"  cmake (log: {build_log}) …")
        _run([cmake, "-S", str(tree / "vendor" / "llama.cpp"), "-B", str(build_dir), *args], "cmake configure",
             build_log)
        _run([cmake, "--build", str(build_dir), "--target", "llama", "-j", jobs], "cmake build", build_log)
        staged = Path(tmp) / "done"
        staged.mkdir()
        built = build_dir / "bin"
        variants = sorted(built.glob(f"{VARIANT_PREFIX}*.so"))
        if not variants:
            raise BuildFailed(f"the build made no {VARIANT_PREFIX}*.so in {built}: is GGML_CPU_ALL_VARIANTS "
                              "still an option of this release?")
        for name in BASE_LIBRARIES:
            if not (built / name).exists():
                raise BuildFailed(f"the build made no {name} in {built}")
            shutil.copyfile(built / name, staged / name)  # the file a symlink names, under the name wanted
        for module in variants:
            shutil.copyfile(module, staged / module.name)
        (staged / "cmake-args.txt").write_text(" ".join(args) + "\n", encoding="utf-8")
        os.replace(staged, out)
    return out


def cached_or_built(version: str, args: list[str] = CMAKE_ARGS, log=print) -> Path:
    """The library folder for ``args``, from the cache or built now."""
    folder = cache_folder(version, args)
    if (folder / BASE_LIBRARIES[0]).is_file() and variant_tags(folder):
        return folder
    log(f"building llama.cpp {version} with its CPU variants; first time only, ~10 min on 2 cores")
    return build(version, args, folder, log=log)
