import sys

from .fp16_gemm_6 import Fp16Gemm6

if __name__ == "__main__":
    kernel_plan = Fp16Gemm6()
    sys.exit(kernel_plan.benchmark_kernel_argparse())
