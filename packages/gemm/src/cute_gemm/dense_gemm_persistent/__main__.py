import sys

from .dense_gemm_persistent import BlackwellDenseGemmPersistent

if __name__ == "__main__":
    kernel_plan = BlackwellDenseGemmPersistent()
    sys.exit(kernel_plan.benchmark_kernel_argparse())
