import sys

from kernelplan.cli import kernel_main

from .mixed_input_gemm import MixedInputGemm

if __name__ == "__main__":
    sys.exit(kernel_main(MixedInputGemm))
