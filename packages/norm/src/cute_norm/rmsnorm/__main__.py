"""rmsnorm: see ``rmsnorm.py``."""

import sys

from kernelplan.cli import kernel_main

from .rmsnorm import CutlassRMSNorm

if __name__ == "__main__":
    sys.exit(kernel_main(CutlassRMSNorm))
