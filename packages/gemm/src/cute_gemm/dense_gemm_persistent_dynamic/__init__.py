"""`python -m cute_gemm.dense_gemm_persistent_dynamic` runs this kernel."""

from .dense_gemm_persistent_dynamic import BlackwellDenseGemmPersistentDynamic

__all__ = ["BlackwellDenseGemmPersistentDynamic"]
