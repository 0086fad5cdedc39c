"""hopper_cta_norm: see ``hopper_cta_norm.py``."""

import sys

from kernelplan.cli import kernel_main

from .hopper_cta_norm import HopperCtaNorm

if __name__ == "__main__":
    sys.exit(kernel_main(HopperCtaNorm))
