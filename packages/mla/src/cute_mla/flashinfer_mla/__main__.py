import sys

from kernelplan.cli import kernel_main

from .flashinfer_mla import FlashInferMla

if __name__ == "__main__":
    sys.exit(kernel_main(FlashInferMla))
