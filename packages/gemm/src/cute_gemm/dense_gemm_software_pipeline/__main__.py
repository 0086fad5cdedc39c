import sys

from .dense_gemm_software_pipeline import BlackwellDenseGemmSoftwarePipeline

if __name__ == "__main__":
    kernel_plan = BlackwellDenseGemmSoftwarePipeline()
    sys.exit(kernel_plan.benchmark_kernel_argparse())
