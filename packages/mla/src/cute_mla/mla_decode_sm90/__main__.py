import sys

from kernelplan.cli import kernel_main

from .mla_decode_sm90 import MlaDecodeSm90

if __name__ == "__main__":
    sys.exit(kernel_main(MlaDecodeSm90))
