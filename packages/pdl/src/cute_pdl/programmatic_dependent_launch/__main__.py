import sys

from .programmatic_dependent_launch import ProgrammaticDependentLaunch

if __name__ == "__main__":
    kernel_plan = ProgrammaticDependentLaunch()
    sys.exit(kernel_plan.benchmark_kernel_argparse())
