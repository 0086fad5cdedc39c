"""`python -m cute_gemm.dense_gemm_persistent` runs this kernel."""

from .dense_gemm_persistent import BlackwellDenseGemmPersistent

__all__ = ["BlackwellDenseGemmPersistent"]
