import sys

from kernelplan.cli import kernel_main

from .mixed_input_fmha_prefill_d256 import MixedInputFmhaPrefillD256

if __name__ == "__main__":
    sys.exit(kernel_main(MixedInputFmhaPrefillD256))
