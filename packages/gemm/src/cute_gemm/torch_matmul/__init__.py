"""`python -m cute_gemm.torch_matmul` runs this kernel; see torch_matmul.py."""

from .torch_matmul import TorchMatmul

__all__ = ["TorchMatmul"]
