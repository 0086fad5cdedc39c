import sys

from kernelplan.cli import kernel_main

from .mamba2_ssd import Mamba2Ssd

if __name__ == "__main__":
    sys.exit(kernel_main(Mamba2Ssd))
