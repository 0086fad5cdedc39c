"""kernelplan: the learn-cute-dsl core.

``KernelPlan`` (one imported CuTe DSL kernel or a peer), ``CuteKernel`` / ``TorchKernel``
(what a plan hands the harness), ``TensorSpec`` (one tensor argument), and the shared runs:
checking (``check``), timing (``timing``), roofline (``roofline``), records (``records``),
static analysis (``static``), and the command lines (``cli``, ``sessions``).
"""

from .errors import KernelPlanError
from .kernel import STREAM, CuteKernel, TensorSpec, TorchKernel
from .plan import KernelPlan, ShapeError

__all__ = [
    "STREAM",
    "CuteKernel",
    "KernelPlan",
    "KernelPlanError",
    "ShapeError",
    "TensorSpec",
    "TorchKernel",
]
