import sys

from .fp16_gemm_0 import Fp16Gemm0

if __name__ == "__main__":
    kernel_plan = Fp16Gemm0()
    sys.exit(kernel_plan.benchmark_kernel_argparse())
