"""hopper_dense_gemm_fp8_2xacc: see ``hopper_dense_gemm_fp8_2xacc.py``."""

import sys

from kernelplan.cli import kernel_main

from .hopper_dense_gemm_fp8_2xacc import HopperDenseGemmFp82xAcc

if __name__ == "__main__":
    sys.exit(kernel_main(HopperDenseGemmFp82xAcc))
