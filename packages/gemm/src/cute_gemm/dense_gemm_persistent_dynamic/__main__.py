import sys

from kernelplan.cli import kernel_main

from .dense_gemm_persistent_dynamic import BlackwellDenseGemmPersistentDynamic

if __name__ == "__main__":
    sys.exit(kernel_main(BlackwellDenseGemmPersistentDynamic))
