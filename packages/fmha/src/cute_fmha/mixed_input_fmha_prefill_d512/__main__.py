import sys

from kernelplan.cli import kernel_main

from .mixed_input_fmha_prefill_d512 import MixedInputFmhaPrefillD512

if __name__ == "__main__":
    sys.exit(kernel_main(MixedInputFmhaPrefillD512))
