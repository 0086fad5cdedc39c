"""`python -m cute_mamba2.mamba2_ssd` runs this kernel; see mamba2_ssd.py."""

from .mamba2_ssd import Mamba2Ssd

__all__ = ["Mamba2Ssd"]
