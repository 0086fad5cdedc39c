import sys

from kernelplan.cli import kernel_main

from .sdpa_efficient import SdpaEfficient

if __name__ == "__main__":
    sys.exit(kernel_main(SdpaEfficient))
