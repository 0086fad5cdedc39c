"""Adapter: the CUTLASS Hopper FMHA forward (TMA + WGMMA, warp-specialised).

Upstream: ``examples/python/CuTeDSL/cute/hopper/kernel/attention/fmha.py``, class
``HopperFusedMultiHeadAttentionForward(qk_acc_dtype, pv_acc_dtype, mma_tiler, is_persistent,
mask_type)`` (L169), called as ``(q, k, v, o, lse, scale_softmax_log2, scale_softmax,
scale_output, window_size_left, window_size_right, stream)`` (L262); the mask helpers are in
``helpers/fmha_helpers.py``. One load warpgroup and two MMA warpgroups per CTA, each MMA
warpgroup owning a 64-row slice of a 128-row Q tile (``cta_tiler`` M = 2 x mma M, L209).

Tensors (upstream's ``run()``, ``create_and_permute_tensor`` L2064): Q, K, V and O are stored
(b, s, h_kv, h_q / h_kv, d) and seen as (s, d, h_r, h_k, b) (``permute_order=(1, 4, 3, 2,
0)``, stride 1 on d); K and V have h_r = 1 and the kernel broadcasts them over the group with
a 0-stride mode (L286-L307). That storage is the workload's BSHD memory reshaped (query head
``j = kv * group + r``, the GQA grouping of the workload), so no copy is made:
:meth:`HopperFmha.prepare_inputs` takes views. The LSE is stored (b, sq, h_kv, group, 1) and
seen as (sq, 1, h_r, h_k, b) (L2214): the workload's (b, h_q, sq) transposed, so the reference
is transposed to it (:meth:`HopperFmha.reference`). The LSE is natural-log
(``s_max * scale_softmax + log(sum)``, L1618).

Mask (upstream's ``run()`` L2130-L2137): ``WINDOW_MASK`` (top-left) or, with
``bottom_right_align``, ``WINDOW_MASK_INFERENCE`` (the end of q aligned with the end of k);
causal is a right window of 0; with no window and ``sk`` not a multiple of the tile's N,
``RESIDUAL_MASK``. The workload's mask is bottom-right aligned, so the adapter picks
``WINDOW_MASK_INFERENCE`` whenever a mask is set and ``sq != sk`` (for ``sq == sk`` both are
the same and it keeps upstream's default ``WINDOW_MASK``).

Constraints (upstream ``can_implement``, L1800, called by :meth:`supports_config`; the module
docstring L68-L76): head dim 32, 64, 128 or 256 for Q/K and V alike (one ``d`` in the
tiler); fp16, bf16 (fp8 e4m3 upstream, not a workload dtype); fp32 accumulators; h_q a
multiple of h_kv; ``window_left < sk - 1`` and ``window_right < sq - 1``; shared memory caps
the tile's N at d = 256 (N < 128) and d = 128 (N < 256); persistent mode excludes more.
``softmax_scale`` goes in as ``scale_softmax`` and its log2e multiple; ``scale_output`` is 1
(upstream's q/k/v/o quantisation scales are 1 by default and not part of the workload).

Persistent mode (``is_persistent``) sizes its grid by ``HardwareInfo().
get_device_multiprocessor_count()`` at trace time (``fmha_helpers.py`` L190); the adapter
replaces that lookup with the target's SM count (``--sm_count``; on a GPU of the target SM,
its own count), so it compiles without a GPU, and records the count.

Target sm_90a: runs on the H200.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kernelplan import STREAM, Config, CuteKernel, ShapeError, Target, TensorSpec
from kernelplan.cutlass_src import load_example
from kernelplan.workloads.attention import ATTENTION_FWD, AttentionProblem

from ..fmha_common import (
    LOG2_E,
    ForwardViews,
    check_head_dims,
    persistent_meta,
    select_mask,
    window_args,
)

HEAD_DIMS = (32, 64, 128, 256)
DTYPES = ("float16", "bfloat16")


@dataclass(frozen=True)
class HopperFmhaConfig(Config):
    """Upstream's tunables (``fmha.py`` argparse): the per-warpgroup MMA tile (M, N)
    (``--mma_tile_shape_mn``, default 64,128; the CTA covers 2 x M query rows) and the
    persistent tile scheduler (``--is_persistent``, default off). Accumulators are fp32 (the
    only type upstream's ``can_implement`` takes)."""

    mma_tile_shape_mn: tuple[int, int] = (64, 128)
    is_persistent: bool = False

    def validate(self) -> None:
        t = self.mma_tile_shape_mn
        if len(t) != 2 or t[0] != 64 or t[1] not in (32, 64, 128, 256):
            raise ShapeError(
                f"mma_tile_shape_mn {t}: M must be 64 (one warpgroup's WGMMA rows) and N one "
                "of 32, 64, 128, 256"
            )


class HopperFmha(ForwardViews):
    """CUTLASS CuTe DSL Hopper FMHA forward (see the module docstring)."""

    name: ClassVar[str] = "hopper_fmha"
    package: ClassVar[str] = "fmha"
    workload = ATTENTION_FWD
    source: ClassVar[str] = "cute/hopper/kernel/attention/fmha.py"
    target_sm: ClassVar[tuple[str, ...]] = ("sm_90a",)
    config_type = HopperFmhaConfig
    # the scale is a runtime Float32 and b a dynamic extent; lengths pick the mask type
    runtime_problem_fields: ClassVar[tuple[str, ...]] = ("b", "softmax_scale")
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL Hopper FMHA forward (TMA + WGMMA, 2 MMA warpgroups), sm_90a"
    )

    # -- what it takes ----------------------------------------------------------------------
    def supports(self, problem: AttentionProblem) -> None:
        p = problem
        check_head_dims(self.name, p, HEAD_DIMS, DTYPES)
        if p.left() is not None and p.left() >= p.sk - 1:
            raise ShapeError(
                f"{self.name} takes --window_left < sk - 1 = {p.sk - 1} (got {p.window_left})"
            )
        if p.window_right >= 0 and p.window_right >= p.sq - 1:
            raise ShapeError(
                f"{self.name} takes --window_right < sq - 1 = {p.sq - 1} (got {p.window_right})"
            )

    def default_config(self, problem: AttentionProblem) -> HopperFmhaConfig:
        """Upstream's default tile, with N lowered where shared memory would not hold it
        (d = 256: N 64; upstream's ``can_implement`` refuses N >= 128 there)."""
        return HopperFmhaConfig(mma_tile_shape_mn=(64, 64 if problem.d_qk == 256 else 128))

    def autotune_configs(self, problem: AttentionProblem) -> list[HopperFmhaConfig]:
        out = []
        for n in (64, 128, 256):
            for pers in (False, True):
                cfg = HopperFmhaConfig(mma_tile_shape_mn=(64, n), is_persistent=pers)
                try:
                    self.supports_config(problem, cfg)
                except ShapeError:
                    continue
                out.append(cfg)
        return out

    def supports_config(self, problem: AttentionProblem, config: HopperFmhaConfig) -> None:
        """Upstream's own ``can_implement`` (shared-memory and persistent-mode limits)."""
        import cutlass

        from kernelplan import dtypes

        p = problem
        cls = load_example(self.source).HopperFusedMultiHeadAttentionForward
        dt = dtypes.cute_type(p.dtype)
        ok, why = cls.can_implement(
            (p.b, p.sq, p.h_q, p.d_qk),
            (p.b, p.sk, p.h_kv, p.d_qk),
            dt,
            dt,
            cutlass.Float32,
            cutlass.Float32,
            tuple(config.mma_tile_shape_mn),
            config.is_persistent,
            p.scale(),
            (p.window_left, -1 if p.causal else p.window_right),
            1,
        )
        if not ok:
            raise ShapeError(
                f"{self.name}: upstream can_implement refuses {config.label()} at d {p.d_qk}: {why}"
            )

    # -- tensors: upstream's 5-D views of the workload's memory ------------------------------
    def tensor_specs(self, problem: AttentionProblem) -> dict[str, TensorSpec]:
        p = problem
        g = p.group

        def t(s: int, h_r: int, d: int, dt: str, **kw: Any) -> TensorSpec:
            # storage (b, s, h_kv, h_r, d), kernel view (s, d, h_r, h_kv, b)
            return TensorSpec(
                (p.b, s, p.h_kv, h_r, d), dt, perm=(1, 4, 3, 2, 0), leading_dim=1, **kw
            )

        out = {"role": "output", "init": "empty"}
        return {
            "q": t(p.sq, g, p.d_qk, p.dtype),
            "k": t(p.sk, 1, p.d_qk, p.dtype),
            "v": t(p.sk, 1, p.d_v, p.dtype),
            "o": t(p.sq, g, p.d_v, p.dtype, **out),
            "lse": t(p.sq, g, 1, "float32", **out),
        }

    # prepare_inputs, reference, reference_lowp: ForwardViews (the LSE in upstream's
    # (b, sq, h_kv, group, 1))

    # -- the kernel -------------------------------------------------------------------------
    def plan(
        self, problem: AttentionProblem, config: HopperFmhaConfig, target: Target
    ) -> CuteKernel:
        import cutlass

        p = problem
        mod = load_example(self.source)
        tile_n = config.mma_tile_shape_mn[1]
        mask = select_mask(mod.fmha_utils.MaskEnum, p, ragged=bool(p.sk % tile_n))
        meta: dict[str, Any] = {"mask_type": mask.name}
        if config.is_persistent:
            persistent_meta(mod, target, meta)
        kernel = mod.HopperFusedMultiHeadAttentionForward(
            cutlass.Float32,
            cutlass.Float32,
            (*config.mma_tile_shape_mn, p.d_qk),
            config.is_persistent,
            mask,
        )
        scale = p.scale()
        wl, wr = window_args(p)
        return CuteKernel(
            self.name,
            kernel,
            lambda t: (
                t["q"],
                t["k"],
                t["v"],
                t["o"],
                t["lse"],
                scale * LOG2_E,
                scale,
                1.0,
                wl,
                wr,
                STREAM,
            ),  # fmt: skip
            self.tensor_specs(p),
            meta=meta,
        )
