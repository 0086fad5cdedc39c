import sys

from kernelplan.cli import kernel_main

from .dense_gemm import BlackwellDenseGemm

if __name__ == "__main__":
    sys.exit(kernel_main(BlackwellDenseGemm))
