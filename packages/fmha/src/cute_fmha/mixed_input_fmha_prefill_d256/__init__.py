"""`python -m cute_fmha.mixed_input_fmha_prefill_d256` runs this kernel (see the adapter)."""

from .mixed_input_fmha_prefill_d256 import MixedInputFmhaPrefillD256

__all__ = ["MixedInputFmhaPrefillD256"]
