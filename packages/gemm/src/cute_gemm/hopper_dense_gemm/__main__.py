import sys

from .hopper_dense_gemm import HopperDenseGemm

if __name__ == "__main__":
    kernel_plan = HopperDenseGemm()
    sys.exit(kernel_plan.benchmark_kernel_argparse())
