import sys

from kernelplan.cli import kernel_main

from .tilegym_mla import TileGymMla

if __name__ == "__main__":
    sys.exit(kernel_main(TileGymMla))
