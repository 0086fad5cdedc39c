import sys

from kernelplan.cli import kernel_main

from .mixed_input_fmha_decode import MixedInputFmhaDecode

if __name__ == "__main__":
    sys.exit(kernel_main(MixedInputFmhaDecode))
