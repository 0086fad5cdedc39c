"""`python -m cute_fmha.blackwell_fmha` runs this kernel; see blackwell_fmha.py."""

from .blackwell_fmha import BlackwellFmha

__all__ = ["BlackwellFmha"]
