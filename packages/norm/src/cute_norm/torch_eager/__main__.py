"""torch_eager: see ``torch_eager.py``."""

import sys

from kernelplan.cli import kernel_main

from .torch_eager import TorchEagerRMSNorm

if __name__ == "__main__":
    sys.exit(kernel_main(TorchEagerRMSNorm))
