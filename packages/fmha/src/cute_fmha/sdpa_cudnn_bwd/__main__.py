import sys

from kernelplan.cli import kernel_main

from .sdpa_cudnn_bwd import SdpaCudnnBwd

if __name__ == "__main__":
    sys.exit(kernel_main(SdpaCudnnBwd))
