"""`python -m cute_gemm.hopper_dense_gemm_persistent` runs this kernel."""

from .hopper_dense_gemm_persistent import HopperDenseGemmPersistent

__all__ = ["HopperDenseGemmPersistent"]
