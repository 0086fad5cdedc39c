import sys

from kernelplan.cli import kernel_main

from .cutlass_mla_decode_fp16 import CutlassMlaDecodeFp16

if __name__ == "__main__":
    sys.exit(kernel_main(CutlassMlaDecodeFp16))
