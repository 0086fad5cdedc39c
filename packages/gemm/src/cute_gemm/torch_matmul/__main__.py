import sys

from kernelplan.cli import kernel_main

from .torch_matmul import TorchMatmul

if __name__ == "__main__":
    sys.exit(kernel_main(TorchMatmul))
