"""`python -m cute_fmha.mixed_input_fmha_decode` runs this kernel (see the adapter)."""

from .mixed_input_fmha_decode import MixedInputFmhaDecode

__all__ = ["MixedInputFmhaDecode"]
