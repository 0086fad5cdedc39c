"""`python -m cute_mla.cutlass_mla_decode_fp8` runs this kernel; see cutlass_mla_decode_fp8.py."""

from .cutlass_mla_decode_fp8 import CutlassMlaDecodeFp8

__all__ = ["CutlassMlaDecodeFp8"]
