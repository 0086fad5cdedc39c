import sys

from kernelplan.cli import kernel_main

from .hopper_dense_gemm import HopperDenseGemm

if __name__ == "__main__":
    sys.exit(kernel_main(HopperDenseGemm))
