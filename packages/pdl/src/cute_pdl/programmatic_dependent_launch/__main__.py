import sys

from kernelplan.cli import kernel_main

from .programmatic_dependent_launch import ProgrammaticDependentLaunch

if __name__ == "__main__":
    sys.exit(kernel_main(ProgrammaticDependentLaunch))
