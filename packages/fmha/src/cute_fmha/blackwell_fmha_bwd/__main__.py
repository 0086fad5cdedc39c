import sys

from kernelplan.cli import kernel_main

from .blackwell_fmha_bwd import BlackwellFmhaBwd

if __name__ == "__main__":
    sys.exit(kernel_main(BlackwellFmhaBwd))
