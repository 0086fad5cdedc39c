import sys

from .dense_gemm import BlackwellDenseGemm

if __name__ == "__main__":
    kernel_plan = BlackwellDenseGemm()
    sys.exit(kernel_plan.benchmark_kernel_argparse())
