import sys

from .dense_gemm_persistent_prefetch import BlackwellDenseGemmPersistentPrefetch

if __name__ == "__main__":
    kernel_plan = BlackwellDenseGemmPersistentPrefetch()
    sys.exit(kernel_plan.benchmark_kernel_argparse())
