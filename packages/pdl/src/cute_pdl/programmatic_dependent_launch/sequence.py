"""The two-kernel sequence as one ``@cute.jit`` host function (imported on the first ``plan()``,
so that importing the adapter imports neither the DSL nor the example).

It calls the upstream ``elementwise_add`` (``dsl_tutorials/programmatic_dependent_launch.py``
L204) twice, as upstream's ``run_func`` (L293) calls its two compiled functions: the DSL inlines
a ``@cute.jit`` called from another, so one compile holds both kernels and one call enqueues
both launches, with nothing in between. The DSL re-reads this function's source and resolves
its annotations in this module's globals, which is why it lives at module level here rather
than as a closure in the adapter.
"""

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute

from kernelplan.cutlass_src import load_example

SOURCE = "dsl_tutorials/programmatic_dependent_launch.py"
elementwise_add = load_example(SOURCE).elementwise_add


@cute.jit
def pdl_sequence(
    mU: cute.Tensor,
    mV: cute.Tensor,
    mW: cute.Tensor,
    mX: cute.Tensor,
    mY: cute.Tensor,
    stream: cuda.CUstream,
    use_pdl: cutlass.Constexpr = True,
):
    """w = u + v (kernel 1: triggers its dependents after its loads), then y = w + x (kernel 2:
    loads x, waits for kernel 1, loads w); ``use_pdl`` sets the PDL attribute on both launches."""
    elementwise_add(mU, mV, mW, stream, use_pdl, True)
    elementwise_add(mW, mX, mY, stream, use_pdl, False)
