"""`python -m cute_gemm.dense_gemm_persistent_prefetch` runs this kernel."""

from .dense_gemm_persistent_prefetch import BlackwellDenseGemmPersistentPrefetch

__all__ = ["BlackwellDenseGemmPersistentPrefetch"]
