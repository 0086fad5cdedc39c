import sys

from kernelplan.cli import kernel_main

from .flash_attn4_bwd import FlashAttn4Bwd

if __name__ == "__main__":
    sys.exit(kernel_main(FlashAttn4Bwd))
