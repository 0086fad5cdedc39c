"""`python -m cute_blockscaled.dense_blockscaled_gemm_persistent_prefetch` runs this kernel;
see dense_blockscaled_gemm_persistent_prefetch.py."""

from .dense_blockscaled_gemm_persistent_prefetch import DenseBlockscaledGemmPersistentPrefetch

__all__ = ["DenseBlockscaledGemmPersistentPrefetch"]
