import sys

from kernelplan.cli import kernel_main

from .fp16_gemm_1 import Fp16Gemm1

if __name__ == "__main__":
    sys.exit(kernel_main(Fp16Gemm1))
