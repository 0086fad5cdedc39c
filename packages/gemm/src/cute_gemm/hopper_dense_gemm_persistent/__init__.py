"""`python -m cute_gemm.hopper_dense_gemm_persistent` runs this kernel; see hopper_dense_gemm_persistent.py."""

from .hopper_dense_gemm_persistent import HopperDenseGemmPersistent

__all__ = ["HopperDenseGemmPersistent"]
