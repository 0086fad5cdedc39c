"""NVTX ranges for the annotation profiling mode (the ``nvtx`` package, else torch's)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def nvtx_range(name: str | None, color: str = "green") -> Iterator[None]:
    """Push an NVTX range named ``name`` for the duration of the block (no-op for None)."""
    if not name:
        yield
        return
    try:
        import nvtx
    except ImportError:
        nvtx = None
    if nvtx is not None:
        with nvtx.annotate(name, color=color, domain="kernelplan"):
            yield
        return
    import torch

    torch.cuda.nvtx.range_push(name)
    try:
        yield
    finally:
        torch.cuda.nvtx.range_pop()
