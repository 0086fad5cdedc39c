"""`python -m cute_mla.flashmla` runs this implementation; see flashmla.py."""

from .flashmla import FlashMla

__all__ = ["FlashMla"]
