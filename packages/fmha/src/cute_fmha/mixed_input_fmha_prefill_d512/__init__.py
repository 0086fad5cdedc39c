"""`python -m cute_fmha.mixed_input_fmha_prefill_d512` runs this kernel (see the adapter)."""

from .mixed_input_fmha_prefill_d512 import MixedInputFmhaPrefillD512

__all__ = ["MixedInputFmhaPrefillD512"]
