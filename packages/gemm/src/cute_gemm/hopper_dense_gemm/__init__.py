"""`python -m cute_gemm.hopper_dense_gemm` runs this kernel; see hopper_dense_gemm.py."""

from .hopper_dense_gemm import HopperDenseGemm

__all__ = ["HopperDenseGemm"]
