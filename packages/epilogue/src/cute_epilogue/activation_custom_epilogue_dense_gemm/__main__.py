import sys

from kernelplan.cli import kernel_main

from .activation_custom_epilogue_dense_gemm import ActivationCustomEpilogueDenseGemm

if __name__ == "__main__":
    sys.exit(kernel_main(ActivationCustomEpilogueDenseGemm))
