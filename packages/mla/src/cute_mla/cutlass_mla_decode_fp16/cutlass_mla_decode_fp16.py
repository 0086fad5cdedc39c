"""Adapter: CUTLASS CuTe DSL Blackwell MLA decode, fp16.

Upstream: ``cute/blackwell/kernel/attention/mla/mla_decode_fp16.py``; what it takes and how the
workload's tensors are split for it: :mod:`cute_mla.cutlass_mla`. sm_100a: static analysis on
any machine (``uv run mla cutlass_mla_decode_fp16 --prof_type static``), a run needs an SM100 GPU.
"""

from __future__ import annotations

from typing import ClassVar

from ..cutlass_mla import CutlassMlaDecode


class CutlassMlaDecodeFp16(CutlassMlaDecode):
    """MLA decode with fp16 Q, latent cache and output (see the module docstring)."""

    name: ClassVar[str] = "cutlass_mla_decode_fp16"
    source: ClassVar[str] = "cute/blackwell/kernel/attention/mla/mla_decode_fp16.py"
    kernel_class: ClassVar[str] = "BlackwellMultiHeadLatentAttentionForwardFP16"
    dtype: ClassVar[str] = "float16"
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL Blackwell MLA decode (fp16, tcgen05 + TMEM), sm_100a"
    )
