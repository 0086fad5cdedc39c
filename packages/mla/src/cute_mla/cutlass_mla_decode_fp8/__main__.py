import sys

from kernelplan.cli import kernel_main

from .cutlass_mla_decode_fp8 import CutlassMlaDecodeFp8

if __name__ == "__main__":
    sys.exit(kernel_main(CutlassMlaDecodeFp8))
