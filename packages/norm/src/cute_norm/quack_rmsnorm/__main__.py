"""quack_rmsnorm: see ``quack_rmsnorm.py``."""

import sys

from kernelplan.cli import kernel_main

from .quack_rmsnorm import QuackRMSNorm

if __name__ == "__main__":
    sys.exit(kernel_main(QuackRMSNorm))
