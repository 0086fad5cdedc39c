import sys

from kernelplan.cli import kernel_main

from .flash_attn4 import FlashAttn4

if __name__ == "__main__":
    sys.exit(kernel_main(FlashAttn4))
