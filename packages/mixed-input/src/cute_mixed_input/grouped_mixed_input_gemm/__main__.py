import sys

from kernelplan.cli import kernel_main

from .grouped_mixed_input_gemm import GroupedMixedInputGemm

if __name__ == "__main__":
    sys.exit(kernel_main(GroupedMixedInputGemm))
