import sys

from .fp16_gemm_2 import Fp16Gemm2

if __name__ == "__main__":
    kernel_plan = Fp16Gemm2()
    sys.exit(kernel_plan.benchmark_kernel_argparse())
