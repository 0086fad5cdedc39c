import sys

from .fp16_gemm_3_1 import Fp16Gemm3_1

if __name__ == "__main__":
    kernel_plan = Fp16Gemm3_1()
    sys.exit(kernel_plan.benchmark_kernel_argparse())
