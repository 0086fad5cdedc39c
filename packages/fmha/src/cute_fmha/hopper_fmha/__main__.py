import sys

from kernelplan.cli import kernel_main

from .hopper_fmha import HopperFmha

if __name__ == "__main__":
    sys.exit(kernel_main(HopperFmha))
