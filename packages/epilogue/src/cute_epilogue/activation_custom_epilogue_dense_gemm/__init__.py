"""One imported kernel (the adapter is activation_custom_epilogue_dense_gemm.py); run it with
``python -m cute_epilogue.activation_custom_epilogue_dense_gemm --help``.
"""

from .activation_custom_epilogue_dense_gemm import ActivationCustomEpilogueDenseGemm

__all__ = ["ActivationCustomEpilogueDenseGemm"]
