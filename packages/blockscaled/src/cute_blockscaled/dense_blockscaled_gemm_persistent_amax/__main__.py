import sys

from kernelplan.cli import kernel_main

from .dense_blockscaled_gemm_persistent_amax import DenseBlockscaledGemmPersistentAmax

if __name__ == "__main__":
    sys.exit(kernel_main(DenseBlockscaledGemmPersistentAmax))
