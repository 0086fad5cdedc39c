"""Adapter: class ``SSDKernel`` of the CUTLASS CuTe DSL example
``cute/blackwell/kernel/attention/mamba2_ssd/mamba2_ssd.py`` (with its tile scheduler,
``mamba2_ssd_tile_scheduler.py``, which the example imports; its reference,
``mamba2_ssd_reference.py``, is where the workload's definition is taken from).

An implementation of the SSD workload (:data:`kernelplan.workloads.ssd.SSD`). What it takes
beyond the workload's tensors, stated here:

- Time split into chunks: every tensor is seen as (.., C, L) with L = ``chunk_len``
  contiguous: the same memory as the workload's time-contiguous (.., T) tensors, viewed as
  upstream's ``run()`` builds them (L3336-L3405): x (P, L, C, H, B), dt ("delta") (L, C, H, B),
  B/C (L, N, C, G, B), y (L, P, C, H, B), final_state ("fstate") (P, N, H, B), D (P|1, H).
- ``cumsum_delta`` (L, C, H, B), fp32: the within-chunk cumulative sum of dt * A, an input the
  host computes (upstream L3435-L3451, from the fp32 values before rounding; here from the
  stored dt and A, so the kernel and the reference see the same numbers). A itself reaches the
  kernel only through it.
- Dynamic modes: upstream marks C, H, B (and G, and final_state's H, B; D's H) dynamic with
  ``mark_compact_shape_dynamic`` and keeps P, L, N static (the tile shape). ``TensorSpec``
  has no per-mode mark, so :func:`_dynamic` applies upstream's marks to the real tensors and
  builds the same fake tensors (symbolic extents for those modes, 64-bit symbolic strides
  where a stride depends on them) for a static compile.

Upstream compiles with no options and ``max_active_clusters`` for cluster size 1 (L3465-L3482).
Target SM: sm_100a (tcgen05 MMAs through TMEM, TMA).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from kernelplan import (
    STREAM,
    Config,
    CuteKernel,
    KernelPlan,
    ShapeError,
    Target,
    TensorSpec,
    dtypes,
)
from kernelplan.cutlass_src import load_example
from kernelplan.device import max_active_clusters
from kernelplan.kernel import Const
from kernelplan.workloads.ssd import SSD, SsdProblem

#: kernel argument -> (workload tensor, storage shape builder, view permutation, dynamic modes)
#: (upstream ``run()`` L3336-L3405 and L3435-L3451)
VIEWS = {
    "x": (
        "x",
        lambda p: (p.batch, p.heads, p.head_dim, p.chunks, p.chunk_len),
        (2, 4, 3, 1, 0),
        (2, 3, 4),
    ),
    "cumsum_delta": (
        None,
        lambda p: (p.batch, p.heads, p.chunks, p.chunk_len),
        (3, 2, 1, 0),
        (1, 2, 3),
    ),
    "delta": ("dt", lambda p: (p.batch, p.heads, p.chunks, p.chunk_len), (3, 2, 1, 0), (1, 2, 3)),
    "b": (
        "b",
        lambda p: (p.batch, p.groups, p.d_state, p.chunks, p.chunk_len),
        (4, 2, 3, 1, 0),
        (2, 3, 4),
    ),
    "c": (
        "c",
        lambda p: (p.batch, p.groups, p.d_state, p.chunks, p.chunk_len),
        (4, 2, 3, 1, 0),
        (2, 3, 4),
    ),
    "y": (
        "y",
        lambda p: (p.batch, p.heads, p.head_dim, p.chunks, p.chunk_len),
        (4, 2, 3, 1, 0),
        (2, 3, 4),
    ),
    "fstate": (
        "final_state",
        lambda p: (p.batch, p.heads, p.head_dim, p.d_state),
        (2, 3, 1, 0),
        (2, 3),
    ),
    "d": ("d", lambda p: (p.heads, p.head_dim if p.d_skip == "vector" else 1), (1, 0), (1,)),
}
#: the kernel's argument order (``SSDKernel.__call__``, L365-L377)
ARGS = ("x", "cumsum_delta", "delta", "b", "c", "y", "fstate", "d")

#: upstream's default problem (``--gbehcdln 2,4,2,40,32,64,128,128``, vector D, bf16)
UPSTREAM_DEFAULT = SsdProblem()


@dataclass(frozen=True)
class Mamba2SsdConfig(Config):
    """What SSDKernel is built with besides the problem; the defaults are the example's (the
    kernel asserts both are Float32, L98-L101)."""

    # --cumsum_delta_dtype default (L3650) (cutlass.Float32)
    cumsum_delta_dtype: str = "Float32"
    # --acc_dtype default (L3653) (cutlass.Float32)
    acc_dtype: str = "Float32"


def _dim_order(spec: TensorSpec) -> tuple[int, ...]:
    """torch's ``dim_order()`` of the view: modes from the largest stride to the smallest."""
    st = spec.view_stride()
    return tuple(sorted(range(len(st)), key=lambda i: -st[i]))


def _dynamic(t: Any, spec: TensorSpec, modes: tuple[int, ...]) -> Any:
    """Upstream's ``mark_compact_shape_dynamic`` on ``modes`` of a real CuTe tensor; for a fake
    one, the fake tensor such a mark gives; placeholders pass."""
    import cutlass.cute as cute
    from cutlass.cute.runtime import _FakeTensor, _Tensor, make_fake_tensor

    if isinstance(t, _Tensor):
        for m in modes:
            t = t.mark_compact_shape_dynamic(mode=m, stride_order=_dim_order(spec))
        return t
    if not isinstance(t, _FakeTensor):
        return t
    perm = spec.perm or tuple(range(len(spec.shape)))
    dyn_storage = {perm[m] for m in modes}  # storage dims whose extent is symbolic
    shape = tuple(cute.sym_int() if i in modes else s for i, s in enumerate(spec.view_shape()))
    stride = []
    for i, s in enumerate(spec.view_stride()):
        inner = range(perm[i] + 1, len(spec.shape))  # storage dims faster than this one
        stride.append(cute.sym_int64() if any(d in dyn_storage for d in inner) else s)
    return make_fake_tensor(dtypes.cute_type(spec.dtype), shape, tuple(stride), assumed_align=16)


class Mamba2Ssd(KernelPlan):
    """Blackwell Mamba2 SSD: chunked scan with intra-chunk (C B^T masked, times X) and
    inter-chunk (state) tcgen05 MMAs, warp-specialised; sm_100a."""

    name: ClassVar[str] = "mamba2_ssd"
    package: ClassVar[str] = "mamba2"
    workload = SSD
    source: ClassVar[str] = "cute/blackwell/kernel/attention/mamba2_ssd/mamba2_ssd.py"
    # tcgen05 (L42), blackwell_helpers (L43), tcgen05.CtaGroup (L116)
    target_sm: ClassVar[tuple[str, ...]] = ("sm_100a",)
    config_type = Mamba2SsdConfig
    description: ClassVar[str] = "CUTLASS CuTe DSL Blackwell Mamba2 SSD (chunked scan), sm_100a"

    def supports(self, problem: SsdProblem) -> None:
        """fp16/bf16 I/O (L94-L97); chunk_len and d_state are the M of the kernel's 1-CTA
        tcgen05 tiles (L, L, N), (L, D, L), (N, D, L), (L, D, N) (L110-L113): 64 or 128."""
        p = problem
        if p.dtype not in ("float16", "bfloat16"):
            raise ShapeError(f"{self.name} takes --dtype float16 or bfloat16 (got {p.dtype})")
        for key in ("chunk_len", "d_state"):
            if getattr(p, key) not in (64, 128):
                raise ShapeError(
                    f"{self.name}: --{key} {getattr(p, key)} is an MMA tile M here: 64 or 128"
                )

    def default_problem(self) -> SsdProblem:
        return UPSTREAM_DEFAULT

    def tensor_specs(self, problem: SsdProblem) -> dict[str, TensorSpec]:
        """The workload's tensors in the chunked views (see the module docstring), plus A (not
        an argument of the kernel: the reference needs it) and cumsum_delta."""
        p = problem
        base = SSD.tensor_specs(p)
        specs: dict[str, TensorSpec] = {}
        for arg in ARGS:
            wname, shape, perm, _ = VIEWS[arg]
            if arg == "d" and p.d_skip == "none":
                continue
            src = base[wname] if wname else TensorSpec((), "float32")
            specs[arg] = TensorSpec(
                shape(p),
                "float32" if wname is None else src.dtype,
                perm=perm,
                role=src.role,
                init=src.init,
                scale=src.scale,
            )
        specs["a"] = base["a"]
        return specs

    def _workload_view(self, problem: SsdProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        p = problem
        out = {}
        for arg, (wname, _, _, _) in VIEWS.items():
            if wname and arg in inputs:
                out[wname] = inputs[arg].reshape(SSD.tensor_specs(p)[wname].shape)
        out["a"] = inputs["a"]
        return out

    def prepare_inputs(self, problem: SsdProblem, seed: int, device: str = "cuda"):
        """The workload's inputs reshaped into the chunked storage, and cumsum_delta."""
        import torch

        p = problem
        w = SSD.prepare_inputs(p, SSD.tensor_specs(p), seed, device)
        out = {}
        for arg, (wname, shape, _, _) in VIEWS.items():
            if wname and wname in w:
                out[arg] = w[wname].reshape(shape(p))
        da = out["delta"].float() * w["a"].float().view(1, -1, 1, 1)
        out["cumsum_delta"] = torch.cumsum(da, dim=-1).contiguous()
        out["a"] = w["a"]
        return out

    def reference(self, problem: SsdProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        r = SSD.reference(problem, self._workload_view(problem, inputs))
        return {"y": r["y"].reshape(VIEWS["y"][1](problem)), "fstate": r["final_state"]}

    def reference_lowp(self, problem: SsdProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        import torch

        to = getattr(torch, problem.dtype)
        return {n: t.to(to).float() for n, t in self.reference(problem, inputs).items()}

    def plan(self, problem: SsdProblem, config: Mamba2SsdConfig, target: Target) -> CuteKernel:
        p = problem
        mod = load_example(self.source)
        kernel = mod.SSDKernel(
            io_dtype=dtypes.cute_type(p.dtype),
            cumsum_delta_dtype=dtypes.cute_type(config.cumsum_delta_dtype),
            acc_dtype=dtypes.cute_type(config.acc_dtype),
            L=p.chunk_len,
            D=p.head_dim,
            N=p.d_state,
            has_d=p.d_skip != "none",
            d_has_hdim=p.d_skip == "vector",
        )
        mac, why = max_active_clusters(1, target)
        specs = self.tensor_specs(p)

        def args(t: Mapping[str, Any]) -> tuple:
            views = tuple(
                _dynamic(t[a], specs[a], VIEWS[a][3]) if a in specs else None for a in ARGS
            )
            return (*views, Const(mac), STREAM)

        meta = {"max_active_clusters": mac, "max_active_clusters_from": why}
        return CuteKernel(self.name, kernel, args, specs, meta=meta)


__all__ = ["Mamba2Ssd", "Mamba2SsdConfig"]
