"""`python -m cute_blockscaled.dense_blockscaled_gemm_persistent_amax` runs this kernel; see
dense_blockscaled_gemm_persistent_amax.py."""

from .dense_blockscaled_gemm_persistent_amax import DenseBlockscaledGemmPersistentAmax

__all__ = ["DenseBlockscaledGemmPersistentAmax"]
