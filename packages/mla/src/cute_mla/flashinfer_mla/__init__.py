"""`python -m cute_mla.flashinfer_mla` runs this implementation; see flashinfer_mla.py."""

from .flashinfer_mla import FlashInferMla

__all__ = ["FlashInferMla"]
