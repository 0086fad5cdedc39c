import sys

from kernelplan.cli import kernel_main

from .flashmla import FlashMla

if __name__ == "__main__":
    sys.exit(kernel_main(FlashMla))
