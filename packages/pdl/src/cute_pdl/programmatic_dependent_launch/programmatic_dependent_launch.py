"""Adapter: Programmatic Dependent Launch (PDL) of two dependent elementwise adds, from the CUTLASS
CuTe DSL tutorial ``dsl_tutorials/programmatic_dependent_launch.py``.

The workload (:data:`kernelplan.workloads.add_chain.ADD_CHAIN`) is the example's two-kernel
sequence on one stream::

    w = u + v      kernel 1 (is_first_kernel=True): loads u, v, then
                   ``griddepcontrol.launch_dependents`` (L181), adds, stores w
    y = w + x      kernel 2 (is_first_kernel=False): loads x (independent of kernel 1), then
                   ``griddepcontrol.wait`` (L192), loads w, adds, stores y

Both are the upstream ``@cute.jit elementwise_add(mA, mB, mC, stream, use_pdl, is_first_kernel)``
(L204); ``use_pdl`` (config, default True) sets the PDL launch attribute on both launches. The
device code is the same with and without it (the ``griddepcontrol`` instructions are always
there; without the attribute ``wait`` returns at once), so the A/B isolates the launch
attribute.

How it is reached (the two differences from upstream, both deliberate):

- Upstream compiles ``elementwise_add`` twice (L271, L281) and calls the two compiled functions
  one after the other from Python (``run_func``, L293). Here one ``@cute.jit`` host function,
  :func:`.sequence.pdl_sequence`, calls ``elementwise_add`` twice (the DSL inlines a ``@cute.jit``
  called from another), so one compile holds both kernels and one call enqueues the whole
  sequence: the harness times the sequence as one unit, the check sees both outputs, and the
  static record analyses both kernels (the main one plus ``functions``). Nothing may sit
  between the two launches: an event recorded between them would stand between primary and
  secondary and prevent the overlap, which is why the pair is never timed kernel by kernel.
- Upstream compiles with ``options="--enable-tvm-ffi"``, and so does this adapter
  (``apache-tvm-ffi`` is a dependency of this package): the plan returns
  ``CuteKernel(..., tvm_ffi=True)``, which compiles from fake tensors with dynamic layouts
  (upstream: ``from_dlpack(t).mark_layout_dynamic()``, element alignment), so one compile
  serves every shape, and launches with the torch tensors themselves (a TVM-FFI compiled
  function takes those, not ``from_dlpack`` CuTe tensors).

Timing: CUDA-graph replay by default (config ``cuda_graph``, default True; the harness's
``--cuda-graph`` flag also turns it on). A kernel of the example's size (256x256 f32: 32 CTAs,
a few microseconds) is shorter than the host's launch cost, so with plain launches the GPU
drains its queue between sequences and kernel 2 is often submitted after kernel 1 has ended:
there is nothing left to overlap, and the timing is the host's (the H200 A/B of both modes
settles it). Graph replay (as upstream's benchmark, ``use_cuda_graphs=True`` at L336) keeps the
PDL attribute as a programmatic edge and launches the sequences back to back with no host in
between, which is where PDL's gain shows.
``--config cuda_graph=false`` times plain launches for comparison. What runs is what is
recorded: the timing's own ``cuda_graph`` field says how the samples were taken, and the
kernel's ``meta["cuda_graph"]`` (in the static record, and for the runner to record with any
run) says that this config times graph replays whatever the caller asked for.

Target SM: ``griddepcontrol`` needs sm_90 or newer and nothing arch-specific; the scaffold
derived ``sm_90a`` because its feature table files ``griddepcontrol`` with the Hopper-only
instructions. ``sm_90a`` stays first (static analysis compiles for it: it is what the DSL
builds on an H200, whose own arch it detects as ``sm_90a``), and ``sm_90`` says it runs on any
GPU of SM 90 or newer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from kernelplan import STREAM, Config, CuteKernel, KernelPlan, KernelPlanError, Target
from kernelplan.kernel import Const
from kernelplan.workloads.add_chain import ADD_CHAIN, ORDER, AddChainProblem


def _require_tvm_ffi() -> None:
    """Fail with one clear line where ``apache-tvm-ffi`` is missing: the example folder holds a
    ``tvm_ffi/`` directory with no ``__init__``, which ``import tvm_ffi`` would otherwise take as
    a namespace package (then the DSL fails with "module 'tvm_ffi' has no attribute ...")."""
    try:
        import tvm_ffi
    except ImportError:
        tvm_ffi = None
    if tvm_ffi is None or not hasattr(tvm_ffi, "Function"):
        raise KernelPlanError(
            "programmatic_dependent_launch compiles with --enable-tvm-ffi and needs the "
            "apache-tvm-ffi package (>=0.1.15,<0.2): `uv sync --all-packages`, or stage its "
            "wheel for an offline host"
        )


def _pdl_sequence() -> Callable[..., Any]:
    """The ``@cute.jit`` host function of the two-kernel sequence (:mod:`.sequence`)."""
    _require_tvm_ffi()
    from .sequence import SOURCE, pdl_sequence

    assert ProgrammaticDependentLaunch.source == SOURCE
    return pdl_sequence


@dataclass(frozen=True)
class PdlConfig(Config):
    """``use_pdl``: the PDL launch attribute on both launches (upstream's ``--use_pdl``; on
    by default here, the feature under study). ``cuda_graph``: time CUDA-graph replays (see
    the module docstring); not part of the compiled code."""

    use_pdl: bool = True
    cuda_graph: bool = True


class ProgrammaticDependentLaunch(KernelPlan):
    """Two dependent elementwise adds (w = u + v; y = w + x) launched with or without PDL
    (config ``use_pdl``), timed as one sequence; f32, any M x N."""

    name: ClassVar[str] = "programmatic_dependent_launch"
    package: ClassVar[str] = "pdl"
    workload = ADD_CHAIN
    source: ClassVar[str] = "dsl_tutorials/programmatic_dependent_launch.py"
    # griddepcontrol (L181, L192) needs sm_90+; sm_90a first: the arch the static analysis
    # compiles for and the one the DSL builds for on an H200. See the module docstring.
    target_sm: ClassVar[tuple[str, ...]] = ("sm_90a", "sm_90")
    config_type: ClassVar[type[Config]] = PdlConfig
    #: dynamic layouts: the shape is not part of the compiled code
    runtime_problem_fields: ClassVar[tuple[str, ...]] = ("M", "N")
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL programmatic dependent launch: w=u+v then y=w+x, with/without PDL"
    )

    def autotune_configs(self, problem: AddChainProblem) -> list[PdlConfig]:
        """Both launch modes, so ``--autotune`` times the A/B in one run (one record)."""
        base = self.default_config(problem)
        return [base.replace(use_pdl=True), base.replace(use_pdl=False)]

    # -- how the upstream entry point is reached --------------------------------------------
    def plan(self, problem: AddChainProblem, config: PdlConfig, target: Target) -> CuteKernel:
        use_pdl = config.use_pdl

        def args(t: Mapping[str, Any]) -> tuple:
            return (*(t[n] for n in ORDER), STREAM, Const(use_pdl))

        meta = {
            "use_pdl": use_pdl,
            "tvm_ffi": True,
            "kernels_per_launch": 2,
            # timings of this config are CUDA-graph replays whatever the caller asked for
            # (run_benchmark below)
            "cuda_graph": config.cuda_graph,
        }
        return CuteKernel(
            self.name, _pdl_sequence(), args, self.tensor_specs(problem), meta=meta, tvm_ffi=True
        )

    # -- timing: graph replay unless the config says otherwise ------------------------------
    def run_benchmark(self, problem: AddChainProblem, config: PdlConfig, **kw: Any) -> Any:
        """As :meth:`KernelPlan.run_benchmark`, with CUDA-graph replay on unless
        ``config.cuda_graph`` is false (the caller's ``cuda_graph=True`` turns it on
        regardless). One timed unit is the whole two-kernel sequence. The returned timing's
        ``cuda_graph`` says which way the samples were taken."""
        kw["cuda_graph"] = bool(kw.get("cuda_graph")) or config.cuda_graph
        return super().run_benchmark(problem, config, **kw)
