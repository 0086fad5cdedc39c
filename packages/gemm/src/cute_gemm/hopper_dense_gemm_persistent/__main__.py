import sys

from .hopper_dense_gemm_persistent import HopperDenseGemmPersistent

if __name__ == "__main__":
    kernel_plan = HopperDenseGemmPersistent()
    sys.exit(kernel_plan.benchmark_kernel_argparse())
