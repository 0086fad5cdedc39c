"""kernelplan: the learn-cute-dsl core.

A *workload* (:mod:`kernelplan.workloads`: GEMM, MLA decode, ...) is defined once; its
*implementations* (``KernelPlan`` subclasses in the packages) register against it. What a
plan hands the harness: ``CuteKernel`` (a CuTe DSL host function) or ``TorchKernel`` (a peer);
``TensorSpec`` describes one tensor argument; ``Target`` is the SM and SM count compiled for.
The shared runs: checking (``check``), timing (``timing``), roofline (``roofline``), records
(``records``), static analysis (``static``); the command lines: ``cli`` (one kernel) and
``sessions`` (a package or a workload).
"""

from .device import Target
from .errors import KernelPlanError
from .kernel import STREAM, Const, CuteKernel, TensorSpec, TorchKernel
from .plan import KernelPlan
from .workload import Config, NoConfig, Problem, ShapeError, Workload

__all__ = [
    "STREAM",
    "Config",
    "Const",
    "CuteKernel",
    "KernelPlan",
    "KernelPlanError",
    "NoConfig",
    "Problem",
    "ShapeError",
    "Target",
    "TensorSpec",
    "TorchKernel",
    "Workload",
]
