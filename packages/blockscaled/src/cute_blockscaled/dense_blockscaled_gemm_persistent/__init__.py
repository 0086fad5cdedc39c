"""`python -m cute_blockscaled.dense_blockscaled_gemm_persistent` runs this kernel; see
dense_blockscaled_gemm_persistent.py."""

from .dense_blockscaled_gemm_persistent import DenseBlockscaledGemmPersistent

__all__ = ["DenseBlockscaledGemmPersistent"]
