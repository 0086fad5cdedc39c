"""`python -m cute_mla.tilegym_mla` runs this implementation; see tilegym_mla.py."""

from .tilegym_mla import TileGymMla

__all__ = ["TileGymMla"]
