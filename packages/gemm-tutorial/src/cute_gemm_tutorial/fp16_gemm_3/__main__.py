import sys

from .fp16_gemm_3 import Fp16Gemm3

if __name__ == "__main__":
    kernel_plan = Fp16Gemm3()
    sys.exit(kernel_plan.benchmark_kernel_argparse())
