import sys

from kernelplan.cli import kernel_main

from .ampere_flash_attention_v2 import AmpereFlashAttentionV2

if __name__ == "__main__":
    sys.exit(kernel_main(AmpereFlashAttentionV2))
