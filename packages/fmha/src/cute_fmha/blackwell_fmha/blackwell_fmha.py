"""Adapter: the CUTLASS Blackwell FMHA forward (TMA + tcgen05, S/P/O in TMEM, warp-specialised).

Upstream: ``examples/python/CuTeDSL/cute/blackwell/kernel/attention/fmha/fmha.py``, class
``BlackwellFusedMultiHeadAttentionForward(qk_acc_dtype, pv_acc_dtype, mma_tiler, head_dim,
is_persistent, mask_type, enable_ex2_emulation, enable_skip_correction, use_tma_store)``
(L117-L132), called as ``(q, k, v, o, problem_size, cum_seqlen_q, cum_seqlen_k, lse, sink,
scale_softmax_log2, scale_softmax, scale_output, skip_softmax_threshold_log2,
window_size_left, window_size_right, skip_softmax_count, total_softmax_count, stream,
use_pdl)`` (L366-L386). ``run()`` builds the kernel through its ``fmha_class`` parameter
(L3407, L3481; the scaffold needs ``--entry`` for that). Two softmax warpgroups, one
correction warpgroup, MMA, load and epilogue warps (L197-L203); each CTA covers 2 x 128 query
rows (``cta_tiler``, L180).

Tensors (``run()`` L3640-L3650, the host function's layouts L456-L484): Q/O stored (b, s_q,
h_kv, group, d) and K/V (b, s_k, h_kv, 1, d): the workload's BSHD memory reshaped (query head
``j = kv * group + r``), so :meth:`BlackwellFmha.prepare_inputs` takes views. The kernel reads
only each tensor's pointer, element type and ``shape[1]`` (the length) and builds its own
layouts. The LSE is stored (b, s_q, h_kv, group) (``lse_shape`` L3650, head stride 1 "to match
FlashInfer", L479): the workload's (b, h_q, s_q) transposed; the reference is transposed to it.
Sink tokens, skip-softmax and its counters, varlen (``cum_seqlen_*``) and PDL are off (None /
False), as upstream's defaults; the LSE is always computed (upstream's ``--lse_calculation``).

Mask (``run()`` L3692-L3701, as the Hopper adapter): ``WINDOW_MASK`` (top-left) or, with
``bottom_right_align``, ``WINDOW_MASK_INFERENCE``; causal is a right window of 0; no window
and ``sk`` not a multiple of the tile's N: ``RESIDUAL_MASK``. The workload is bottom-right
aligned, so a mask with ``sq != sk`` takes ``WINDOW_MASK_INFERENCE``.

Constraints (``check_supported_dtypes`` L3280, ``check_invalid_shape`` L3300, the module
docstring L99-L104): head dim 32, 64, 128 (192 with d_v 128 only for fp8 e4m3, not a workload
dtype), one d for Q/K and V; fp16 or bf16 (fp8 e4m3 upstream); fp32 accumulators; h_q a
multiple of h_kv; ``mma_tiler_mn`` 128,128. ``problem_size`` and the scales are runtime
arguments. Persistent mode sizes its grid from ``HardwareInfo`` at trace time
(``helpers/fmha_helpers.py`` L190); the adapter substitutes the target's SM count.

Target sm_100a (tcgen05, TMEM): compiled here for static analysis; running needs an SM100 GPU.
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

HEAD_DIMS = (32, 64, 128)
DTYPES = ("float16", "bfloat16")
#: upstream compiles with this on DSL >= 4.6 (``run()`` L3797)
OPTIONS = "--opt-level=2"


@dataclass(frozen=True)
class BlackwellFmhaConfig(Config):
    """Upstream's tunables and their argparse defaults (``fmha.py`` L4270-L4300):
    ``mma_tiler_mn`` (128,128, the only one the docstring allows), persistent scheduling
    (off), exp2 emulation (off), skip-correction (off); ``use_tma_store`` the constructor's
    default (on; ``run()`` turns it off only for varlen)."""

    mma_tiler_mn: tuple[int, int] = (128, 128)
    is_persistent: bool = False
    enable_ex2_emulation: bool = False
    enable_skip_correction: bool = False
    use_tma_store: bool = True

    def validate(self) -> None:
        if tuple(self.mma_tiler_mn) != (128, 128):
            raise ShapeError(
                f"mma_tiler_mn {self.mma_tiler_mn}: upstream takes 128,128 only (fmha.py L102)"
            )


class BlackwellFmha(ForwardViews):
    """CUTLASS CuTe DSL Blackwell FMHA forward (see the module docstring)."""

    name: ClassVar[str] = "blackwell_fmha"
    package: ClassVar[str] = "fmha"
    workload = ATTENTION_FWD
    source: ClassVar[str] = "cute/blackwell/kernel/attention/fmha/fmha.py"
    # sm_100a: tcgen05 MMA / TMEM (fmha.py L43-L44, L49)
    target_sm: ClassVar[tuple[str, ...]] = ("sm_100a",)
    config_type = BlackwellFmhaConfig
    # the scales are runtime Float32; the sizes stay in the key (problem_size is a tuple of
    # Python ints, and the mask type follows the lengths)
    runtime_problem_fields: ClassVar[tuple[str, ...]] = ("softmax_scale",)
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL Blackwell FMHA forward (TMA + tcgen05, TMEM), sm_100a"
    )

    def supports(self, problem: AttentionProblem) -> None:
        check_head_dims(self.name, problem, HEAD_DIMS, DTYPES)

    # -- tensors: upstream's 5-D storage of the workload's memory ----------------------------
    def tensor_specs(self, problem: AttentionProblem) -> dict[str, TensorSpec]:
        p = problem
        g = p.group

        def t(s: int, h_r: int, d: int, **kw: Any) -> TensorSpec:
            # (b, s, h_kv, h_r, d), d contiguous (upstream: cute_tensor_like, align 32)
            return TensorSpec((p.b, s, p.h_kv, h_r, d), p.dtype, leading_dim=4, align=32, **kw)

        out = {"role": "output", "init": "empty"}
        return {
            "q": t(p.sq, g, p.d_qk),
            "k": t(p.sk, 1, p.d_qk),
            "v": t(p.sk, 1, p.d_v),
            "o": t(p.sq, g, p.d_v, **out),
            "lse": TensorSpec((p.b, p.sq, p.h_kv, g), "float32", leading_dim=3, align=32, **out),
        }

    # prepare_inputs, reference, reference_lowp: ForwardViews (the LSE in upstream's
    # (b, s_q, h_kv, group))

    # -- the kernel -------------------------------------------------------------------------
    def plan(
        self, problem: AttentionProblem, config: BlackwellFmhaConfig, target: Target
    ) -> CuteKernel:
        import cutlass

        p = problem
        mod = load_example(self.source)
        mask = select_mask(mod.fmha_utils.MaskEnum, p, ragged=bool(p.sk % config.mma_tiler_mn[1]))
        meta: dict[str, Any] = {"mask_type": mask.name}
        if config.is_persistent:
            persistent_meta(mod, target, meta)
        kernel = mod.BlackwellFusedMultiHeadAttentionForward(
            cutlass.Float32,
            cutlass.Float32,
            tuple(config.mma_tiler_mn),
            p.d_qk,
            config.is_persistent,
            mask,
            config.enable_ex2_emulation,
            config.enable_skip_correction,
            use_tma_store=config.use_tma_store,
        )
        # [b, s_q_max, s_lse_max, s_k_max, h_q, h_k, d, dv] (run() L3776-L3785)
        size = (p.b, p.sq, p.sq, p.sk, p.h_q, p.h_kv, p.d_qk, p.d_v)
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
                size,
                None,
                None,  # cum_seqlen_q/k: no varlen
                t["lse"],
                None,  # lse, sink
                scale * LOG2_E,
                scale,
                1.0,  # scale_softmax_log2, scale_softmax, scale_output
                None,  # skip_softmax_threshold_log2: off
                wl,
                wr,
                None,
                None,  # skip/total softmax counters
                STREAM,
                False,  # stream, use_pdl
            ),  # fmt: skip
            self.tensor_specs(p),
            options=OPTIONS,
            meta=meta,
        )
