"""`python -m cute_fmha.blackwell_fmha_bwd` runs this kernel; see blackwell_fmha_bwd.py."""

from .blackwell_fmha_bwd import BlackwellFmhaBwd

__all__ = ["BlackwellFmhaBwd"]
