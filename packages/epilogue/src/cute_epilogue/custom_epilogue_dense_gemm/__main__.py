import sys

from kernelplan.cli import kernel_main

from .custom_epilogue_dense_gemm import CustomEpilogueDenseGemm

if __name__ == "__main__":
    sys.exit(kernel_main(CustomEpilogueDenseGemm))
