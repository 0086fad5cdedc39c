"""torch_rms_norm: see ``torch_rms_norm.py``."""

import sys

from kernelplan.cli import kernel_main

from .torch_rms_norm import TorchRmsNorm

if __name__ == "__main__":
    sys.exit(kernel_main(TorchRmsNorm))
