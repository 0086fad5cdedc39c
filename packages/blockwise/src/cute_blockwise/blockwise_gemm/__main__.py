import sys

from kernelplan.cli import kernel_main

from .blockwise_gemm import BlockwiseGemm

if __name__ == "__main__":
    sys.exit(kernel_main(BlockwiseGemm))
