"""One imported kernel (the adapter is custom_epilogue_dense_gemm.py); run it with
``python -m cute_epilogue.custom_epilogue_dense_gemm --help``.
"""

from .custom_epilogue_dense_gemm import CustomEpilogueDenseGemm

__all__ = ["CustomEpilogueDenseGemm"]
