import sys

from kernelplan.cli import kernel_main

from .sdpa_efficient_bwd import SdpaEfficientBwd

if __name__ == "__main__":
    sys.exit(kernel_main(SdpaEfficientBwd))
