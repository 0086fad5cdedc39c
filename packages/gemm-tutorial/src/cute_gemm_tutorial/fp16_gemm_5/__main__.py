import sys

from .fp16_gemm_5 import Fp16Gemm5

if __name__ == "__main__":
    kernel_plan = Fp16Gemm5()
    sys.exit(kernel_plan.benchmark_kernel_argparse())
