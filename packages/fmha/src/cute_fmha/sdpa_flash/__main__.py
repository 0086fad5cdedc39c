import sys

from kernelplan.cli import kernel_main

from .sdpa_flash import SdpaFlash

if __name__ == "__main__":
    sys.exit(kernel_main(SdpaFlash))
