import sys

from kernelplan.cli import kernel_main

from .contiguous_grouped_gemm import ContiguousGroupedGemm

if __name__ == "__main__":
    sys.exit(kernel_main(ContiguousGroupedGemm))
