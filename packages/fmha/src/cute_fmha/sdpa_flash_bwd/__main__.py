import sys

from kernelplan.cli import kernel_main

from .sdpa_flash_bwd import SdpaFlashBwd

if __name__ == "__main__":
    sys.exit(kernel_main(SdpaFlashBwd))
