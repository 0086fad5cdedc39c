"""Adapter: Programmatic Dependent Launch (PDL) of two dependent elementwise adds, from the CUTLASS
CuTe DSL tutorial ``dsl_tutorials/programmatic_dependent_launch.py``.

The workload is the example's two-kernel sequence on one stream::

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
  (``apache-tvm-ffi`` is a dependency of this package). A TVM-FFI compiled function takes the
  torch tensors themselves, not ``from_dlpack`` CuTe tensors, so the plan returns a
  :class:`TvmFfiKernel` (a :class:`~kernelplan.CuteKernel` whose ``bind`` passes the torch
  views); the compile uses fake tensors with dynamic layouts (upstream:
  ``from_dlpack(t).mark_layout_dynamic()``, element alignment), so one compile serves every
  shape.

Timing: CUDA-graph replay by default (config ``cuda_graph``, default True; the harness's
``--cuda-graph`` flag also turns it on). A kernel of the example's size (256x256 f32: 32 CTAs,
a few microseconds) is shorter than the host's launch cost, so with plain launches the GPU
drains its queue between sequences and kernel 2 is often submitted after kernel 1 has ended:
there is nothing left to overlap, and the timing is the host's (the H200 A/B of both modes
settles it). Graph replay (as upstream's benchmark, ``use_cuda_graphs=True`` at L336) keeps the
PDL attribute as a programmatic edge and launches the sequences back to back with no host in
between, which is where PDL's gain shows.
``--config cuda_graph=false`` times plain launches for comparison.

Target SM: ``griddepcontrol`` needs sm_90 or newer and nothing arch-specific; the scaffold
derived ``sm_90a`` because its feature table files ``griddepcontrol`` with the Hopper-only
instructions. ``sm_90a`` stays first (static analysis compiles for it: it is what the DSL
builds on an H200, whose own arch it detects as ``sm_90a``), and ``sm_90`` says it runs on any
GPU of SM 90 or newer.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from kernelplan import STREAM, CuteKernel, KernelPlan, KernelPlanError, ShapeError, TensorSpec
from kernelplan.kernel import Const

#: The example's CLI defaults for the workload (its argparse, from L345).
PROBLEM_DEFAULTS: dict[str, Any] = {
    "M": 256,
    "N": 256,
}
#: Element type of every tensor (upstream: float32 only, L255-L259).
DTYPE = "float32"
#: Bytes the tensors' base pointers are assumed aligned to: upstream's ``from_dlpack(t)``
#: without ``assumed_align`` assumes the element size.
ALIGN = 4
#: Tensor names in argument order: kernel 1 reads u, v and writes w; kernel 2 reads w, x and
#: writes y (upstream's names, L255-L259).
ORDER = ("u", "v", "w", "x", "y")
OUTPUTS = ("w", "y")


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


class TvmFfiKernel(CuteKernel):
    """A :class:`~kernelplan.CuteKernel` compiled with ``--enable-tvm-ffi``: compiled once per
    key from the fake arguments (dynamic layouts, so any shape), launched with the torch
    tensors themselves (a TVM-FFI function rejects ``from_dlpack`` CuTe tensors that were not
    made with ``enable_tvm_ffi=True``) and the current torch stream."""

    def bind(self, inputs: Mapping[str, Any]) -> Callable[[], Any]:
        compiled = self.compile(self.fake_args())
        views = {n: s.kernel_view(inputs[n]) for n, s in self.specs.items()}
        runtime = [a for a in self.args_fn(views) if not isinstance(a, Const)]
        stream_at = [i for i, a in enumerate(runtime) if a is STREAM]
        current_stream = self.current_stream

        def launch() -> Any:
            call = list(runtime)
            for i in stream_at:
                call[i] = current_stream()
            return compiled(*call)

        return launch


class ProgrammaticDependentLaunch(KernelPlan):
    """Two dependent elementwise adds (w = u + v; y = w + x) launched with or without PDL
    (config ``use_pdl``), timed as one sequence; f32, any M x N."""

    name: ClassVar[str] = "programmatic_dependent_launch"
    package: ClassVar[str] = "pdl"
    source: ClassVar[str] = "dsl_tutorials/programmatic_dependent_launch.py"
    # griddepcontrol (L181, L192) needs sm_90+; sm_90a first: the arch the static analysis
    # compiles for and the one the DSL builds for on an H200. See the module docstring.
    target_sm: ClassVar[tuple[str, ...]] = ("sm_90a", "sm_90")
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL programmatic dependent launch: w=u+v then y=w+x, with/without PDL"
    )

    # -- the workload: the example's own CLI -------------------------------------------------
    def add_problem_arguments(self, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("problem (the example's CLI)")
        g.add_argument("--M", type=int, default=PROBLEM_DEFAULTS["M"])
        g.add_argument("--N", type=int, default=PROBLEM_DEFAULTS["N"])
        # Upstream flags left to the harness (--check, --warmup, --reps, --warm-l2):
        # --warmup_iterations, --iterations, --skip_ref_check, --benchmark.
        # Upstream --use_pdl is a config here: --config use_pdl=true|false.

    def problem_from_args(self, args: argparse.Namespace) -> dict[str, Any]:
        problem = {"M": int(args.M), "N": int(args.N)}
        self.validate(problem)
        return problem

    def validate(self, problem: Mapping[str, Any]) -> None:
        for k in ("M", "N"):
            if int(problem[k]) < 1:
                raise ShapeError(f"{self.name}: {k} must be >= 1, got {problem[k]}")

    def check_problems(self) -> list[dict[str, Any]]:
        """The example's 256x256 (32 CTAs of 16x128), and a shape that is not a multiple of
        the 16x128 tile in either mode (the predicated tail must be right)."""
        return [dict(PROBLEM_DEFAULTS), {"M": 250, "N": 300}]

    def profile_problems(self) -> list[dict[str, Any]]:
        """The example's size (launch-bound: where PDL matters), a mid size, and a size whose
        kernels are many waves long (where the overlap is a small share of the time)."""
        return [dict(PROBLEM_DEFAULTS), {"M": 1024, "N": 1024}, {"M": 8192, "N": 8192}]

    def compute_dtype(self, problem: Mapping[str, Any]) -> str:
        return DTYPE

    # -- configs ---------------------------------------------------------------------------
    def default_config(self, problem: Mapping[str, Any]) -> dict[str, Any]:
        """``use_pdl``: the PDL launch attribute on both launches (upstream's ``--use_pdl``;
        on by default here, the feature under study). ``cuda_graph``: time graph replays
        (see the module docstring); not part of the compiled code."""
        return {"use_pdl": True, "cuda_graph": True}

    def _autotune_configs(self, problem: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Both launch modes, so ``--autotune`` times the A/B in one run (one record)."""
        base = self.default_config(problem)
        return [{**base, "use_pdl": True}, {**base, "use_pdl": False}]

    # -- the workload's definition ---------------------------------------------------------
    def tensor_specs(self, problem: Mapping[str, Any]) -> dict[str, TensorSpec]:
        """Five (M, N) row-major f32 tensors, all with a dynamic layout (stride 1 in mode 1),
        as upstream's ``from_dlpack(t).mark_layout_dynamic()``; w and y are outputs (w is the
        intermediate kernel 2 depends on; both are checked)."""
        shape = (int(problem["M"]), int(problem["N"]))
        return {
            n: TensorSpec(
                shape,
                DTYPE,
                role="output" if n in OUTPUTS else "input",
                init="empty" if n in OUTPUTS else "randn",
                leading_dim=1,
                align=ALIGN,
            )
            for n in ORDER
        }

    def reference_fn(self, problem: Mapping[str, Any], inputs: Mapping[str, Any]) -> dict[str, Any]:
        """w = u + v and y = w + x in float32 (upstream checks y against u + v + x, L314)."""
        u, v, x = (inputs[n].float() for n in ("u", "v", "x"))
        w = u + v
        return {"w": w, "y": w + x}

    def _algorithmic_flops_bytes(self, problem: Mapping[str, Any]) -> tuple[float, float]:
        """Two adds per element; u, v, x read once and w, y written once (w's re-read by
        kernel 2 may hit L2, so it is not counted): 20 bytes per element in f32."""
        mn = float(problem["M"]) * float(problem["N"])
        return 2.0 * mn, 5.0 * 4.0 * mn

    # -- how the upstream entry point is reached --------------------------------------------
    def plan(self, problem: Mapping[str, Any], config: Mapping[str, Any]) -> CuteKernel:
        use_pdl = bool(config.get("use_pdl", True))
        specs = self.tensor_specs(problem)

        def args(t: Mapping[str, Any]) -> tuple:
            return (*(t[n] for n in ORDER), STREAM, Const(use_pdl))

        # Dynamic layouts: the shape is not part of the compiled code, nor is cuda_graph.
        key = (self.name, use_pdl, DTYPE, ALIGN)
        return TvmFfiKernel(
            self.name,
            _pdl_sequence(),
            args,
            specs,
            key=key,
            options="--enable-tvm-ffi",
            meta={"use_pdl": use_pdl, "tvm_ffi": True, "kernels_per_launch": 2},
        )

    # -- timing: graph replay unless the config says otherwise ------------------------------
    def run_benchmark(
        self, problem: Mapping[str, Any], config: Mapping[str, Any], **kw: Any
    ) -> Any:
        """As :meth:`KernelPlan.run_benchmark`, with CUDA-graph replay on unless
        ``config["cuda_graph"]`` is false (the harness's ``--cuda-graph`` flag turns it on
        regardless). One timed unit is the whole two-kernel sequence."""
        kw["cuda_graph"] = bool(kw.get("cuda_graph")) or bool(config.get("cuda_graph", True))
        return super().run_benchmark(problem, config, **kw)
