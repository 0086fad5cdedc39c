import sys

from kernelplan.cli import kernel_main

from .dense_gemm_persistent_prefetch import BlackwellDenseGemmPersistentPrefetch

if __name__ == "__main__":
    sys.exit(kernel_main(BlackwellDenseGemmPersistentPrefetch))
