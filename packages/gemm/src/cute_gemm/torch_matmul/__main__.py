import sys

from .torch_matmul import TorchMatmul

if __name__ == "__main__":
    kernel_plan = TorchMatmul()
    sys.exit(kernel_plan.benchmark_kernel_argparse())
