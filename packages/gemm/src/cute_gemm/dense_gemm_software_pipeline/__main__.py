import sys

from kernelplan.cli import kernel_main

from .dense_gemm_software_pipeline import BlackwellDenseGemmSoftwarePipeline

if __name__ == "__main__":
    sys.exit(kernel_main(BlackwellDenseGemmSoftwarePipeline))
