"""`python -m cute_mla.cutlass_mla_decode_fp16` runs this kernel; see cutlass_mla_decode_fp16.py."""

from .cutlass_mla_decode_fp16 import CutlassMlaDecodeFp16

__all__ = ["CutlassMlaDecodeFp16"]
