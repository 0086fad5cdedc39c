import sys

from .dense_gemm_persistent_dynamic import BlackwellDenseGemmPersistentDynamic

if __name__ == "__main__":
    kernel_plan = BlackwellDenseGemmPersistentDynamic()
    sys.exit(kernel_plan.benchmark_kernel_argparse())
