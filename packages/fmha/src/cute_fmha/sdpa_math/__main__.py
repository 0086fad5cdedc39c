import sys

from kernelplan.cli import kernel_main

from .sdpa_math import SdpaMath

if __name__ == "__main__":
    sys.exit(kernel_main(SdpaMath))
