"""Adapter: CUTLASS Blackwell mixed-input FMHA prefill, head dim 256 (bf16 Q, int8 K/V with
block scales), class ``MixedInputFusedMultiHeadAttentionPrefillD256`` of
``cute/blackwell/kernel/attention/mixed_input_fmha/mixed_input_fmha_prefill_d256.py``.
Everything but the class, head dim and granularities is shared:
:mod:`cute_fmha.mixed_input_prefill`.
"""

from __future__ import annotations

from typing import ClassVar

from ..mixed_input_prefill import MixedInputPrefill


class MixedInputFmhaPrefillD256(MixedInputPrefill):
    """See :mod:`cute_fmha.mixed_input_prefill`."""

    name: ClassVar[str] = "mixed_input_fmha_prefill_d256"
    source: ClassVar[str] = (
        "cute/blackwell/kernel/attention/mixed_input_fmha/mixed_input_fmha_prefill_d256.py"
    )
    kernel_class: ClassVar[str] = "MixedInputFusedMultiHeadAttentionPrefillD256"
    head_dim: ClassVar[int] = 256
    granularities: ClassVar[tuple[int, ...]] = (128, 256)
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL Blackwell mixed-input FMHA prefill d256 (bf16 Q, int8 K/V), sm_100a"
    )
