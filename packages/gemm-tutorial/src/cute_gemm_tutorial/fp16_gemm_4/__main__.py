import sys

from .fp16_gemm_4 import Fp16Gemm4

if __name__ == "__main__":
    kernel_plan = Fp16Gemm4()
    sys.exit(kernel_plan.benchmark_kernel_argparse())
