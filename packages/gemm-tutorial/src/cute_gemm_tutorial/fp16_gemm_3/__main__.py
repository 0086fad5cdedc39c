import sys

from kernelplan.cli import kernel_main

from .fp16_gemm_3 import Fp16Gemm3

if __name__ == "__main__":
    sys.exit(kernel_main(Fp16Gemm3))
