"""`python -m cute_mla.mla_decode_sm90` runs this implementation; see mla_decode_sm90.py."""

from .mla_decode_sm90 import MlaDecodeSm90

__all__ = ["MlaDecodeSm90"]
