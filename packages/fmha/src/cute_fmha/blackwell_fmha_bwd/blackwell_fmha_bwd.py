"""Adapter: the CUTLASS Blackwell FMHA backward (dQ, dK, dV in one warp-specialised kernel).

Upstream: ``examples/python/CuTeDSL/cute/blackwell/kernel/attention/fmha/fmha_bwd.py``, class
``BlackwellFusedMultiHeadAttentionBackward(element_dtype, acc_dtype, mma_tiler, varlen,
mask_type)`` (L104-L112), called as ``(problem_shape, Q, K, V, O, dQ, dK, dV, dO, LSE,
cumulative_s_q, cumulative_s_k, scale_softmax, window_size_left, window_size_right,
workspace, stream)`` (L248-L267), as ``run()`` compiles it (L3074-L3092).

Tensors (``run()`` L2997-L3061): Q, dQ, O, dO stored (b, s_q, h_kv, group, d) and K, dK, V, dV
(b, s_k, h_kv, 1, d), all seen as (s, d, h_r, h_k, b) (``permute_order=(1, 4, 3, 2, 0)``,
d dynamic with divisibility 64, L2904-L2909): the workload's BSHD memory reshaped (query head
``j = kv * group + r``), so :meth:`BlackwellFmhaBwd.prepare_inputs` takes views. The LSE is
stored (b, h_kv, group, s_q) and seen as (s_q, h_r, h_k, b) (L3051-L3060): exactly the
workload's (b, h_q, s_q) memory (upstream fills it with random 10..11; here it is the forward's
LSE). ``workspace``: uint8 scratch of ``_get_workspace_size(s_q, s_k, d, h_q, b, Float32)``
bytes (L2632-L2644: the O.dO row sums, the scaled LSE and an fp32 dQ accumulator), zeroed as
upstream does. No varlen (``cumulative_s_*`` None).

Mask (``run()`` L2978-L2986): ``WINDOW_MASK_BWD`` (top-left) or, with ``bottom_right_align``,
``WINDOW_MASK_BWD_INFERENCE``; causal is a right window of 0; no window and ``s_q`` not a
multiple of the tile's M: ``RESIDUAL_MASK_BWD``. The workload is bottom-right aligned, so a
mask with ``sq != sk`` takes ``WINDOW_MASK_BWD_INFERENCE``.

Constraints (``run()`` L2838-L2847, module docstring L97-L101): head dim 64 or 128, one d for
Q/K and V; fp16 or bf16 (fp8 e4m3 upstream, not a workload dtype); fp32 accumulators; h_q a
multiple of h_kv; ``mma_tiler_mn`` 128,128.

Target sm_100a (tcgen05, TMEM): compiled here for static analysis; running needs an SM100 GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from kernelplan import STREAM, Config, CuteKernel, ShapeError, Target, TensorSpec
from kernelplan.cutlass_src import load_example
from kernelplan.workloads.attention import ATTENTION_BWD, AttentionProblem

from ..fmha_common import WorkloadViews, check_head_dims, select_mask, window_args

HEAD_DIMS = (64, 128)
DTYPES = ("float16", "bfloat16")
OPTIONS = "--opt-level=2"  # upstream's on DSL 4.6 (run() L3091)


@dataclass(frozen=True)
class BlackwellFmhaBwdConfig(Config):
    """Upstream's tunable and its argparse default (``fmha_bwd.py`` L3504): ``mma_tiler_mn``
    128,128 (the only one the docstring allows; accumulators fp32, ``--acc_dtype``)."""

    mma_tiler_mn: tuple[int, int] = (128, 128)

    def validate(self) -> None:
        if tuple(self.mma_tiler_mn) != (128, 128):
            raise ShapeError(
                f"mma_tiler_mn {self.mma_tiler_mn}: upstream takes 128,128 only (fmha_bwd.py L98)"
            )


class BlackwellFmhaBwd(WorkloadViews):
    """CUTLASS CuTe DSL Blackwell FMHA backward (see the module docstring)."""

    name: ClassVar[str] = "blackwell_fmha_bwd"
    package: ClassVar[str] = "fmha"
    workload = ATTENTION_BWD
    source: ClassVar[str] = "cute/blackwell/kernel/attention/fmha/fmha_bwd.py"
    # sm_100a: tcgen05 MMA / TMEM (fmha_bwd.py L43, L48, L385)
    target_sm: ClassVar[tuple[str, ...]] = ("sm_100a",)
    config_type = BlackwellFmhaBwdConfig
    runtime_problem_fields: ClassVar[tuple[str, ...]] = ("softmax_scale",)
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL Blackwell FMHA backward (TMA + tcgen05, TMEM), sm_100a"
    )

    def supports(self, problem: AttentionProblem) -> None:
        check_head_dims(self.name, problem, HEAD_DIMS, DTYPES)

    # -- tensors ------------------------------------------------------------------------------
    def _workspace_bytes(self, problem: AttentionProblem) -> int:
        import cutlass

        p = problem
        cls = load_example(self.source).BlackwellFusedMultiHeadAttentionBackward
        return int(cls._get_workspace_size(p.sq, p.sk, p.d_qk, p.h_q, p.b, cutlass.Float32))

    def tensor_specs(self, problem: AttentionProblem) -> dict[str, TensorSpec]:
        p = problem
        g = p.group

        def t(s: int, h_r: int, d: int, **kw: Any) -> TensorSpec:
            # storage (b, s, h_kv, h_r, d), kernel view (s, d, h_r, h_kv, b)
            return TensorSpec(
                (p.b, s, p.h_kv, h_r, d),
                p.dtype,
                perm=(1, 4, 3, 2, 0),
                leading_dim=1,
                divisibility=64,
                **kw,
            )

        out = {"role": "output", "init": "empty"}
        return {
            "q": t(p.sq, g, p.d_qk),
            "k": t(p.sk, 1, p.d_qk),
            "v": t(p.sk, 1, p.d_v),
            "o": t(p.sq, g, p.d_v),
            "lse": TensorSpec((p.b, p.h_kv, g, p.sq), "float32", perm=(3, 2, 1, 0), leading_dim=0),
            "do": t(p.sq, g, p.d_v),
            "dq": t(p.sq, g, p.d_qk, **out),
            "dk": t(p.sk, 1, p.d_qk, **out),
            "dv": t(p.sk, 1, p.d_v, **out),
            "workspace": TensorSpec(
                (self._workspace_bytes(p),), "uint8", init="zeros", leading_dim=0
            ),
        }

    def prepare_inputs(self, problem: AttentionProblem, seed: int, device: str = "cuda"):
        """The workload's tensors (same seed, same numbers, its forward's O and LSE), as
        upstream's 5-D / 4-D views of the same memory, and a zeroed workspace."""
        p = problem
        specs = self.tensor_specs(p)
        x = self.workload.prepare_inputs(p, specs, seed, device)
        return {n: (x[n] if n == "workspace" else x[n].view(specs[n].shape)) for n in specs}

    def _to_mine(self, problem: AttentionProblem, ref: Mapping[str, Any]) -> dict[str, Any]:
        specs = self.tensor_specs(problem)
        return {n: ref[n].reshape(specs[n].shape) for n in ("dq", "dk", "dv")}

    # -- the kernel ---------------------------------------------------------------------------
    def plan(
        self, problem: AttentionProblem, config: BlackwellFmhaBwdConfig, target: Target
    ) -> CuteKernel:
        import cutlass

        from kernelplan import dtypes

        p = problem
        mod = load_example(self.source)
        ragged = bool(p.sq % config.mma_tiler_mn[0])
        mask = select_mask(mod.fmha_utils.MaskEnum, p, ragged, bwd=True)
        kernel = mod.BlackwellFusedMultiHeadAttentionBackward(
            dtypes.cute_type(p.dtype),
            cutlass.Float32,
            (*config.mma_tiler_mn, p.d_qk),
            False,  # varlen
            mask,
        )
        # (s_q_max, s_k_max, d, ((h_r, h_k), b)) (run() L2987)
        shape = (p.sq, p.sk, p.d_qk, ((p.group, p.h_kv), p.b))
        scale = p.scale()
        wl, wr = window_args(p)
        return CuteKernel(
            self.name,
            kernel,
            lambda t: (
                shape,
                t["q"],
                t["k"],
                t["v"],
                t["o"],
                t["dq"],
                t["dk"],
                t["dv"],
                t["do"],
                t["lse"],
                None,
                None,  # cumulative_s_q/k: no varlen
                scale,
                wl,
                wr,
                t["workspace"],
                STREAM,
            ),  # fmt: skip
            self.tensor_specs(p),
            options=OPTIONS,
            meta={"mask_type": mask.name},
        )
