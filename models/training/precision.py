"""Numeric precision for training on the CPU (torch is imported inside)."""
from __future__ import annotations


def bf16_autocast(wanted: bool):
    """A context factory: bfloat16 autocast when wanted and the CPU computes in it
    natively, else a no-op (emulated bf16 is slower than float32)."""
    import contextlib

    import torch

    if wanted and torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported():
        return lambda: torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext
