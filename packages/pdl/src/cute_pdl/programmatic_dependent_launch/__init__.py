"""One imported kernel (the adapter is programmatic_dependent_launch.py); run it with
``python -m cute_pdl.programmatic_dependent_launch --help``.
"""

from .programmatic_dependent_launch import ProgrammaticDependentLaunch

__all__ = ["ProgrammaticDependentLaunch"]
