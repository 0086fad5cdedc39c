"""torch_scaled_mm: see ``torch_scaled_mm.py``."""

import sys

from kernelplan.cli import kernel_main

from .torch_scaled_mm import TorchScaledMm

if __name__ == "__main__":
    sys.exit(kernel_main(TorchScaledMm))
