import sys

from kernelplan.cli import kernel_main

from .fp16_gemm_0 import Fp16Gemm0

if __name__ == "__main__":
    sys.exit(kernel_main(Fp16Gemm0))
