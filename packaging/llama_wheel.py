"""Build llama-cpp-python for the CPU it will run on, once, and keep the wheel.

PyPI has no binary wheel of llama-cpp-python, and the two ways pip gets one are both
wrong for the planner here:

* a portable build (AVX2 only, as in ``../shared/wheels``) leaves AVX-512, VNNI and
  AMX unused: on our 2-core Xeon (Sapphire Rapids) it read prompts at 55 tokens/s
  against 72, and a pass over 3 tokens took 227 ms against 196 (``hindsight bench
  planner`` has the figures on whole plans);
* pip's own source build compiles with ``-march=native``, which on that CPU also
  turns on llama.cpp's AMX kernels, and the planner then died on its first
  evaluation: GCC 12 (Debian 12's) declares ``_tile_loadconfig`` as reading 8 bytes
  of the 64-byte tile configuration, so the compiler drops the stores of the tile
  shapes before it, and the first tile instruction faults.

So the instruction sets are named one by one from ``/proc/cpuinfo``, AMX included
where the CPU has it, and the vendored AMX code is patched (:data:`AMX_PATCHES`): a
compiler barrier before that load, and the load before every multiplication. With
AMX the planner's passes over several tokens cost less: it planned 88 questions in
252 s against 289 (15 plans came out otherwise: near ties rounded the other way).
The wheel is built from the pinned source release and kept under the user cache
keyed by everything that decides its bytes: the version, the CMake arguments, the
patch, the compiler and the Python tag. A second ``make setup`` finds it and
installs in seconds. Where a release no longer has the patched lines, the build
goes on without AMX.

Usage: ``python packaging/llama_wheel.py requirements-models.txt`` prints the path of
the wheel to install (building it first when the cache has none), or prints nothing
and exits 0 where no tuned build applies (not Linux on x86-64): pip's ordinary
install then stands. Building needs a C++ compiler and CMake; where that fails the
message says so and the exit code is 1, so the caller can fall back.

Runs before the project is installed: standard library only.
"""
from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PACKAGE = "llama-cpp-python"

# (cpuinfo flag(s), the ggml CMake option it allows); the order is ggml's own.
_FEATURES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("sse4_2",), "GGML_SSE42"),
    (("avx",), "GGML_AVX"),
    (("avx2",), "GGML_AVX2"),
    (("fma",), "GGML_FMA"),
    (("f16c",), "GGML_F16C"),
    (("bmi2",), "GGML_BMI2"),
    (("avx_vnni",), "GGML_AVX_VNNI"),
    (("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"), "GGML_AVX512"),
    (("avx512vbmi",), "GGML_AVX512_VBMI"),
    (("avx512_vnni",), "GGML_AVX512_VNNI"),
    (("avx512_bf16",), "GGML_AVX512_BF16"),
    (("amx_tile",), "GGML_AMX_TILE"),
    (("amx_int8",), "GGML_AMX_INT8"),
    (("amx_bf16",), "GGML_AMX_BF16"),
)
_NEEDS_AVX512 = {"GGML_AVX512_VBMI", "GGML_AVX512_VNNI", "GGML_AVX512_BF16"}
_AMX = {"GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16"}
# ggml compiles its AMX kernels only with both tile sets and AVX-512 VNNI beside them
_AMX_NEEDS = {"GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AVX512_VNNI"}

# The vendored AMX code's tile configuration: loaded once per thread, and then the
# compiler may drop most of it (see the module docstring). The patch makes each AMX
# multiplication load the whole configuration: another library in the process
# (onnxruntime's int8 kernels) loads tile shapes of its own on the same threads, and
# llama.cpp then multiplied with those and wrote nonsense plans. Part of the build key.
AMX_SOURCE = "vendor/llama.cpp/ggml/src/ggml-cpu/amx/mmq.cpp"
AMX_PATCHES = (
    ("    static thread_local bool done = false;\n\n    if (done) {\n        return;\n    }\n",
     "    // hindsight: loaded every time, as other code on this thread may load its own\n"),
    ("    _tile_loadconfig(&tc);\n    done = true;\n",
     '    __asm__ __volatile__("" : : "r"(&tc) : "memory");  // hindsight: GCC 12 reads 8 bytes of tc\n'
     "    _tile_loadconfig(&tc);\n"),
)


def pinned_version(requirements: Path) -> str:
    """The ``llama-cpp-python==X`` pin of a requirements file."""
    for line in requirements.read_text(encoding="utf-8").splitlines():
        m = re.match(rf"\s*{re.escape(PACKAGE)}\s*==\s*([^\s#;]+)", line, re.IGNORECASE)
        if m:
            return m.group(1)
    raise SystemExit(f"error: {requirements} pins no {PACKAGE}==VERSION")


def cpu_flags(cpuinfo: str) -> set[str]:
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def cmake_args(flags: set[str]) -> list[str]:
    """ggml's CMake options for the instruction sets ``flags`` has, portable build off."""
    on = {option for needed, option in _FEATURES if all(f in flags for f in needed)}
    if "GGML_AVX512" not in on:
        on -= _NEEDS_AVX512
    if not _AMX_NEEDS <= on:
        on -= _AMX
    args = ["-DGGML_NATIVE=OFF"]
    args += [f"-D{option}={'ON' if option in on else 'OFF'}" for _, option in _FEATURES]
    return args


def uses_amx(args: list[str]) -> bool:
    return "-DGGML_AMX_INT8=ON" in args


def without_amx(args: list[str]) -> list[str]:
    return [f"-D{option}=OFF" if option in _AMX else a for a in args for option in [a[2:].partition("=")[0]]]


class PatchMissing(RuntimeError):
    """The source release lacks a text :data:`AMX_PATCHES` replaces."""


def patch_amx(tree: Path) -> None:
    """Apply :data:`AMX_PATCHES` to the unpacked source ``tree``; PatchMissing when a
    patched text is not there exactly once (another release)."""
    source = tree / AMX_SOURCE
    text = source.read_text(encoding="utf-8") if source.is_file() else ""
    for old, new in AMX_PATCHES:
        if text.count(old) != 1:
            raise PatchMissing(f"{AMX_SOURCE} has {text.count(old)} copies of {old.strip()!r}, not 1")
        text = text.replace(old, new)
    source.write_text(text, encoding="utf-8")


def _compiler() -> str:
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or "c++"
    try:
        return subprocess.run([cxx, "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return cxx


def build_key(version: str, args: list[str]) -> str:
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    patch = [text for pair in AMX_PATCHES for text in pair] if uses_amx(args) else []
    text = "\n".join([PACKAGE, version, *args, *patch, _compiler(), tag, platform.machine()])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def cache_root() -> Path:
    env = os.environ.get("HINDSIGHT_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hindsight"


def _pip(*args: str, env: dict[str, str] | None = None) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], check=True, env=env)


def build(version: str, args: list[str], out: Path) -> Path:
    """Download the source release and build its wheel into ``out`` (made whole or not at all)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".building-") as tmp:
        src, wheels = Path(tmp) / "src", Path(tmp) / "wheel"
        _pip("download", "-q", "--no-deps", "--no-binary", ":all:", f"{PACKAGE}=={version}", "-d", str(src))
        sdist = next(src.iterdir())
        tree = Path(tmp) / "tree"
        with tarfile.open(sdist) as tar:
            tar.extractall(tree, filter="data")
        tree = next(tree.iterdir())  # the release's own top folder
        if uses_amx(args):
            patch_amx(tree)
        env = dict(os.environ, CMAKE_ARGS=" ".join(args),
                   CMAKE_BUILD_PARALLEL_LEVEL=os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2)))
        _pip("wheel", "-q", "--no-deps", "-w", str(wheels), str(tree), env=env)
        wheel = next(wheels.glob("*.whl"))
        staged = Path(tmp) / "done"
        staged.mkdir()
        shutil.move(str(wheel), staged / wheel.name)
        (staged / "cmake-args.txt").write_text(" ".join(args) + "\n", encoding="utf-8")
        os.replace(staged, out)
    return next(out.glob("*.whl"))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python packaging/llama_wheel.py REQUIREMENTS_FILE (the file that pins "
              f"{PACKAGE}==VERSION)", file=sys.stderr)
        return 2
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return 0  # pip's ordinary install stands
    version = pinned_version(Path(argv[0]))
    args = cmake_args(cpu_flags(Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")))
    try:
        wheel = _cached_or_built(version, args)
        if wheel is None and uses_amx(args):
            wheel = _cached_or_built(version, without_amx(args))
    except (subprocess.CalledProcessError, StopIteration, OSError, tarfile.TarError) as exc:
        print(f"error: could not build {PACKAGE} {version} for this CPU ({exc}); a C++ compiler and CMake "
              "are needed", file=sys.stderr)
        return 1
    if wheel is None:
        return 1
    print(wheel)
    return 0


def _cached_or_built(version: str, args: list[str]) -> Path | None:
    """The wheel for ``args``, from the cache or built now; None where the AMX patch
    has nothing to patch in this release."""
    folder = cache_root() / "wheels" / f"{PACKAGE}-{version}-{build_key(version, args)}"
    found = sorted(folder.glob("*.whl")) if folder.is_dir() else []
    if found:
        return found[0]
    print(f"building {PACKAGE} {version} for this CPU ({' '.join(a for a in args if a.endswith('=ON'))}); "
          "first time only, several minutes", file=sys.stderr)
    try:
        return build(version, args, folder)
    except PatchMissing as exc:
        print(f"warning: {exc}; building without AMX", file=sys.stderr)
        return None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
