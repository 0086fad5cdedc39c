import sys

from .fp16_gemm_1 import Fp16Gemm1

if __name__ == "__main__":
    kernel_plan = Fp16Gemm1()
    sys.exit(kernel_plan.benchmark_kernel_argparse())
