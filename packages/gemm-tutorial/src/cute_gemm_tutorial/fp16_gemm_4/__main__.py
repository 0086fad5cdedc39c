import sys

from kernelplan.cli import kernel_main

from .fp16_gemm_4 import Fp16Gemm4

if __name__ == "__main__":
    sys.exit(kernel_main(Fp16Gemm4))
