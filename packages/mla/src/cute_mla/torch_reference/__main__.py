import sys

from kernelplan.cli import kernel_main

from .torch_reference import TorchReference

if __name__ == "__main__":
    sys.exit(kernel_main(TorchReference))
