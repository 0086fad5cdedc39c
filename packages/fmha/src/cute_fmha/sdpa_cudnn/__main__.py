import sys

from kernelplan.cli import kernel_main

from .sdpa_cudnn import SdpaCudnn

if __name__ == "__main__":
    sys.exit(kernel_main(SdpaCudnn))
