import sys

from .custom_epilogue_dense_gemm import CustomEpilogueDenseGemm

if __name__ == "__main__":
    kernel_plan = CustomEpilogueDenseGemm()
    sys.exit(kernel_plan.benchmark_kernel_argparse())
