"""Adapter: CUTLASS Blackwell mixed-input FMHA decode (bf16 Q and O, an int8, int4 or fp8 e4m3
K/V cache with bf16 block scales, one query per sequence, split-KV), class
``MixedInputFusedMultiHeadAttentionDecode`` of
``cute/blackwell/kernel/attention/mixed_input_fmha/mixed_input_fmha_decode.py``.

Upstream's interface: ``__init__(headdim, block_scaledim, grouped_head_tile,
convert_warpgroups)`` (L72-L78) and ``__call__(problem_shape, kv_splits, q_iter, k_iter,
v_iter, k_scale_iter, v_scale_iter, o_iter, m_iter, l_iter, o_partial_iter, m_partial_iter,
l_partial_iter, scale_qs, scale_o, stream)`` (L166-L185), with ``problem_shape = (b, h_q,
h_k, s_k, d)``. It launches two kernels: ``decode`` over the grid (kv_splits, h_r tiles,
h_k * b) (L430-L475), whose CTAs each write a partial O, column max and column sum and
atomically raise the global max ``m``, and ``reduction`` (L477-L499, body L1580-L1614),
which combines the splits into O and the natural-log LSE.

The problem is :class:`cute_fmha.mixed_input_prefill.MixedInputAttentionProblem` (the
workload's, with ``kv_dtype`` and ``scale_granularity``) in the decode setting ``sq = 1``.
What it computes is the workload's attention over the DEQUANTISED K and V (value times its
block's scale), as upstream's own reference ``run_torch_fmha`` does (L1800-L1822): the inputs
are the workload's for the seed with K and V quantised per block
(:func:`cute_fmha.mixed_input_prefill.quantise`).

Tensors. The kernel takes raw pointers and builds its own layouts (L285-L357), so the
storage below is what those layouts read:

- ``q`` (b, 1, h_q, d) and ``o`` (b, 1, h_q, d): the workload's own BSHD storage (upstream
  sees Q as (h_r, d, (h_k, b)) with d innermost, L288-L291; O as (d, h_q, b), L477: the
  same memory when ``sq = 1``);
- ``lse`` (b, h_q, 1) fp32: the workload's (upstream's ``l``, (h_q, b), L479);
- ``k``, ``v`` (b, h_kv, s_k, d) BHSD (L293-L303: d innermost, then s_k, h_k, b); int4 packed
  two a byte along d, so (b, h_kv, s_k, d / 2) uint8 with the Int4 element type (upstream
  allocates one byte per element and fills the first half, ``cutlass.torch.
  cute_tensor_like``; the kernel reads only that half);
- ``scale_k``, ``scale_v`` (b, h_kv, s_k, d / scale_granularity) in Q's type (L339-L357);
- workspaces (L305-L337): ``m`` (b, h_q) fp32, the global max, raised by ``atomic_fmax``
  and so filled with -inf ("must be -inf initialized", L178); ``o_partial``
  (splits, b, h_q, d), ``m_partial`` and ``l_partial`` (splits, b, h_q), fp32, filled with
  0, -inf and 0 as upstream does (L1765-L1770): a split with no KV tile exits early (L578,
  L824-L825) and leaves its partials as they were, which the reduction then weighs by
  exp(-inf) = 0. ``m`` is filled once per input set, not per launch: a repeated launch on the
  same inputs raises it to the same value.

Splits: upstream's rule (``run()`` L1679-L1688): one wave, ``sm_count // (b * h_k *
ceil(h_r / grouped_head_tile))``, at least 1, and 9 for 148 SMs with 32 CTAs a split. Here a
split count above the number of 128-key tiles is lowered to it (the extra CTAs would only
exit early; the workspaces are sized for at most one split per tile, so no config or
``--sm_count`` can outgrow them); the record's meta has the count used.

Constraints (``can_implement`` L130-L162, the constructor's asserts L85-L86 and the stage
arithmetic L226-L280): ``sq = 1``; one head dim for Q/K and V, a multiple of 64 (of 128 for
int4); ``scale_granularity`` divides d and is a multiple of min(d, 128) (one scale per
converted slab: L1161-L1162, L1212-L1213; a finer one fails to compile); ``s_k`` a multiple
of 128 (upstream masks no key tail: keys past ``s_k`` in the last 128-key tile would come
from TMA as zeros and enter the softmax sum with S = 0; upstream's ``run()`` defaults to
1024); no sliding window (causal is accepted: with one query at the last key it hides
nothing); bf16 or fp16 Q and O.

Target sm_100a (tcgen05 MMA with K and V converted into TMEM, ``OperandSource.TMEM``,
L207-L228): compiled here for static analysis only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from kernelplan import STREAM, Config, CuteKernel, KernelPlan, ShapeError, Target, TensorSpec
from kernelplan import dtypes as kdtypes
from kernelplan.cutlass_src import load_example
from kernelplan.workloads.attention import ATTENTION_FWD

from ..mixed_input_prefill import (
    OPTIONS,
    MixedInputAttentionProblem,
    _ptr,
    dequantise,
    quantise,
)

#: the key tile of one decode CTA step (``blk_tile_s``, L195)
TILE_S = 128
#: Q/O element types (upstream's ``--q_dtype``/``--o_dtype``; its default is bf16)
QO_DTYPES = ("bfloat16", "float16")
#: the alignment upstream's tensors assume (``from_dlpack(..., assumed_align=16)``, L1740)
ALIGN = 16


@dataclass(frozen=True)
class MixedInputDecodeConfig(Config):
    """Upstream's tunables; 0 picks the value ``run()`` would.

    Args:
        grouped_head_tile: query heads of one KV head packed into the MMA's N (8, 16, 24 or
            32; 0: ``min(round_up(h_r, 8), 32)``, L1671).
        convert_warpgroups: warpgroups converting K/V (0: 4 for d 512 with h_r 8 and int4,
            2 for d > 128, else 1, L1663-L1668).
        kv_splits: CTAs per (batch, KV head, head tile) along the keys (0: one wave of the
            target's SMs, L1679-L1688).
    """

    grouped_head_tile: int = 0
    convert_warpgroups: int = 0
    kv_splits: int = 0

    def validate(self) -> None:
        for key in ("grouped_head_tile", "convert_warpgroups", "kv_splits"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ShapeError(f"--config {key} must be an integer >= 0 (got {v!r})")
        if self.grouped_head_tile not in (0, 8, 16, 24, 32):
            raise ShapeError(
                f"--config grouped_head_tile {self.grouped_head_tile}: 8, 16, 24 or 32 "
                "(a multiple of 8 up to 32, upstream L86), or 0 for upstream's rule"
            )


def _mma_k(d: int) -> int:
    """The MMA tile's K (L203)."""
    return 128 if d % 128 == 0 else 64


class MixedInputFmhaDecode(KernelPlan):
    """See the module docstring."""

    name: ClassVar[str] = "mixed_input_fmha_decode"
    package: ClassVar[str] = "fmha"
    workload = ATTENTION_FWD
    problem_type = MixedInputAttentionProblem
    source: ClassVar[str] = (
        "cute/blackwell/kernel/attention/mixed_input_fmha/mixed_input_fmha_decode.py"
    )
    target_sm: ClassVar[tuple[str, ...]] = ("sm_100a",)
    config_type = MixedInputDecodeConfig
    runtime_problem_fields: ClassVar[tuple[str, ...]] = ("softmax_scale",)
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL Blackwell mixed-input FMHA decode (bf16 Q, int8/int4/fp8 K/V with "
        "block scales, split-KV), sm_100a"
    )

    # -- problems ---------------------------------------------------------------------------
    def default_problem(self) -> MixedInputAttentionProblem:
        """Upstream's ``run()`` defaults (L1616-L1622): b 1, s_k 1024, h_q 32, h_k 4, d 512,
        one scale per row (block_scaledim 512), int8 K/V, bf16."""
        return MixedInputAttentionProblem(
            b=1, sq=1, sk=1024, h_q=32, h_kv=4, d_qk=512, scale_granularity=512
        )

    def check_problems(self) -> list[MixedInputAttentionProblem]:
        """Upstream's default, then each K/V type at d 128 and 512, GQA ratios 1 (one head in
        an 8-wide tile), 4, 8, 16 and 32 (reg reconfig on), several scales a row, one split
        per tile and more splits than tiles."""
        P = MixedInputAttentionProblem
        return [
            self.default_problem(),
            P(b=2, sq=1, sk=512, h_q=16, h_kv=2, d_qk=128, kv_dtype="int4", scale_granularity=128),
            P(b=2, sq=1, sk=384, h_q=8, h_kv=2, d_qk=128, kv_dtype="float8_e4m3fn",
              scale_granularity=128),
            P(b=1, sq=1, sk=2048, h_q=32, h_kv=1, d_qk=256, scale_granularity=128),
            P(b=3, sq=1, sk=256, h_q=4, h_kv=4, d_qk=512, kv_dtype="int4", scale_granularity=128),
            P(b=1, sq=1, sk=1024, h_q=64, h_kv=4, d_qk=512, kv_dtype="float8_e4m3fn",
              scale_granularity=512, causal=True),
        ]  # fmt: skip

    def profile_problems(self) -> list[MixedInputAttentionProblem]:
        """Decode batches at upstream's heads (32 query, 4 KV, d 512), 8k and 32k keys, each
        K/V type (for an SM100 GPU; not run on the H200)."""
        P = MixedInputAttentionProblem
        return [
            P(b=b, sq=1, sk=sk, h_q=32, h_kv=4, d_qk=512, kv_dtype=kv, scale_granularity=512)
            for kv in ("int8", "int4", "float8_e4m3fn")
            for b, sk in ((1, 32768), (8, 8192), (32, 8192))
        ]

    def supports(self, problem: MixedInputAttentionProblem) -> None:
        p = problem
        if not isinstance(p, MixedInputAttentionProblem):
            raise ShapeError(f"{self.name} takes a mixed-input problem (--kv_dtype, ...)")
        if p.sq != 1:
            raise ShapeError(f"{self.name} is a decode kernel: --sq 1 (got {p.sq})")
        if p.d_qk != p.d_v:
            raise ShapeError(
                f"{self.name} takes one head dim for Q/K and V (got --d_qk {p.d_qk}, --d_v {p.d_v})"
            )
        if p.d_qk % 64:
            raise ShapeError(f"{self.name}: head dim {p.d_qk} must be a multiple of 64")
        if p.kv_dtype == "int4" and p.d_qk % 128:
            raise ShapeError(
                f"{self.name}: head dim {p.d_qk} must be a multiple of 128 for int4 K/V "
                "(TMA of packed int4)"
            )
        slab = min(p.d_qk, 128)
        if p.scale_granularity % slab:
            raise ShapeError(
                f"{self.name}: --scale_granularity {p.scale_granularity} must be a multiple of "
                f"{slab} (the convert warps apply one scale to each {slab}-wide slab of d they "
                "convert, L1161-L1162 and L1212-L1213)"
            )
        if p.dtype not in QO_DTYPES:
            raise ShapeError(f"{self.name} takes dtype {' or '.join(QO_DTYPES)} (got {p.dtype})")
        if p.sk % TILE_S:
            raise ShapeError(
                f"{self.name}: --sk {p.sk} must be a multiple of {TILE_S} (upstream masks no "
                "key tail: keys past sk would enter the softmax with S = 0)"
            )
        if p.window_left >= 0 or p.window_right >= 0:
            raise ShapeError(f"{self.name}: upstream takes no sliding window")
        self._stages(p, self._head_tile(p, MixedInputDecodeConfig()))

    def supports_config(self, problem: MixedInputAttentionProblem, config: Config) -> None:
        p, c = problem, config
        ght = self._head_tile(p, c)
        cw = self._convert_warpgroups(p, c)
        d, k = p.d_qk, _mma_k(p.d_qk)
        tiles_dk, tiles_dm, tiles_sk = d // k, -(-d // 128), TILE_S // k
        if tiles_dk % cw or (tiles_dm * tiles_sk) % cw:  # asserts at L1024-L1025
            raise ShapeError(
                f"--config convert_warpgroups {cw} must divide the K tiles of d ({tiles_dk}) "
                f"and the V tiles ({tiles_dm * tiles_sk})"
            )
        if ght > 16 and 72 + max(128, min(256, 512 - 72 - 112 * cw)) + 112 * cw > 512:
            raise ShapeError(  # the register split of L112-L126 (reg reconfig above 16 heads)
                f"--config convert_warpgroups {cw} with a head tile of {ght}: 72 + 112 x {cw} "
                "+ at least 128 registers a thread exceed the 512 of four warpgroups"
            )
        self._stages(p, ght)

    # -- derived settings -------------------------------------------------------------------
    @staticmethod
    def _head_tile(p: MixedInputAttentionProblem, c: MixedInputDecodeConfig) -> int:
        return c.grouped_head_tile or min(-(-p.group // 8) * 8, 32)

    @staticmethod
    def _convert_warpgroups(p: MixedInputAttentionProblem, c: MixedInputDecodeConfig) -> int:
        if c.convert_warpgroups:
            return c.convert_warpgroups
        if p.d_qk == 512 and p.group == 8 and p.kv_dtype == "int4":
            return 4
        return 2 if p.d_qk > 128 else 1

    def _stages(self, p: MixedInputAttentionProblem, ght: int) -> tuple[int, int]:
        """(convert stages in TMEM, K/V stages in SMEM) as ``__call__`` computes them
        (L226-L280); a problem that leaves no stage is refused."""
        import cutlass.memory

        d, k = p.d_qk, _mma_k(p.d_qk)
        eight_bit = p.kv_dtype != "int4"
        scaledim = d // p.scale_granularity
        cols = ght * 2 + ght * (d // 128)  # S/P stages, O
        cvt = (512 - cols) // (k * 16 // 32)
        if eight_bit:
            cvt = min(cvt, 4 if ght == 32 and k == 128 else 8)
        bits = 768 * 8 + ght * 32 + scaledim * TILE_S * 2 * 16 + ght * 4 * 32
        bits += ght * k * (d // k) * 16 + 128 * ght * 2 * 16
        # upstream calls cutlass.utils.get_smem_capacity_in_bytes (L271), deprecated in 4.8.1
        cap = cutlass.memory.get_smem_capacity_in_bytes("sm_100")
        kv = (cap * 8 - bits) // (128 * k * 8)
        if eight_bit:
            kv = min(kv, 8 if k == 128 else 14)
        if cvt < 1 or kv < 1:
            raise ShapeError(
                f"{self.name}: head dim {d} with a head tile of {ght} leaves {cvt} convert "
                f"stage(s) in TMEM and {kv} K/V stage(s) in SMEM (upstream L226-L280)"
            )
        return cvt, kv

    def kv_splits(self, p: MixedInputAttentionProblem, c: MixedInputDecodeConfig, target: Target):
        """(splits, how): upstream's rule or the config's, at most one per 128-key tile."""
        tiles = p.sk // TILE_S
        if c.kv_splits:
            n, how = c.kv_splits, "config"
        else:
            grid_yz = p.b * p.h_kv * -(-p.group // self._head_tile(p, c))
            n = max(1, target.sm_count // grid_yz)
            if target.sm_count == 148 and grid_yz == 32:
                n = 9
            how = f"upstream's rule over {target.sm_count} SMs ({target.sm_count_from})"
        if n > tiles:
            n, how = tiles, f"{how}, lowered to the {tiles} key tiles"
        return n, how

    # -- tensors ----------------------------------------------------------------------------
    def tensor_specs(self, problem: MixedInputAttentionProblem) -> dict[str, TensorSpec]:
        p = problem
        d, splits = p.d_qk, p.sk // TILE_S
        kv_shape = (p.b, p.h_kv, p.sk, d // 2 if p.kv_dtype == "int4" else d)
        kv_storage = "uint8" if p.kv_dtype == "int4" else p.kv_dtype
        kv_element = "Int4" if p.kv_dtype == "int4" else None

        def t(shape: tuple[int, ...], dt: str, **kw: Any) -> TensorSpec:
            return TensorSpec(shape, dt, align=ALIGN, **kw)  # pointers only

        ws = dict(init="zeros")
        return {
            "q": t((p.b, 1, p.h_q, d), p.dtype),
            "k": t(kv_shape, kv_storage, element=kv_element, init="zeros"),
            "v": t(kv_shape, kv_storage, element=kv_element, init="zeros"),
            "scale_k": t((p.b, p.h_kv, p.sk, d // p.scale_granularity), p.dtype),
            "scale_v": t((p.b, p.h_kv, p.sk, d // p.scale_granularity), p.dtype),
            "o": t((p.b, 1, p.h_q, d), p.dtype, role="output", init="empty"),
            "lse": t((p.b, p.h_q, 1), "float32", role="output", init="empty"),
            "m": t((p.b, p.h_q), "float32", **ws),
            "o_partial": t((splits, p.b, p.h_q, d), "float32", **ws),
            "m_partial": t((splits, p.b, p.h_q), "float32", **ws),
            "l_partial": t((splits, p.b, p.h_q), "float32", **ws),
        }

    def prepare_inputs(self, problem: MixedInputAttentionProblem, seed: int, device="cuda"):
        """The workload's inputs for ``seed`` (Q and O as they are), K and V quantised per
        block, the workspaces filled as upstream fills them."""
        p = problem
        x = self.workload.prepare_inputs(p, self.workload.tensor_specs(p), seed, device)
        k, sk = quantise(x["k"], p.scale_granularity, p.kv_dtype)
        v, sv = quantise(x["v"], p.scale_granularity, p.kv_dtype)
        specs = self.tensor_specs(p)
        out = {"q": x["q"], "k": k, "v": v, "scale_k": sk.to(x["q"].dtype)}
        out.update(scale_v=sv.to(x["q"].dtype), o=x["o"], lse=x["lse"])
        for n in ("m", "o_partial", "m_partial", "l_partial"):
            out[n] = specs[n].allocate(None, device)
        out["m"].fill_(-math.inf)
        out["m_partial"].fill_(-math.inf)
        return out

    def _dequantised(self, problem, inputs: Mapping[str, Any], round_to: Any = None):
        g = problem.scale_granularity
        k = dequantise(inputs["k"], inputs["scale_k"], g)
        v = dequantise(inputs["v"], inputs["scale_v"], g)
        if round_to is not None:  # the kernel's MMA operand: value x scale in Q's type
            k, v = k.to(round_to).float(), v.to(round_to).float()
        return {"q": inputs["q"], "k": k, "v": v}

    def reference(self, problem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The workload's reference (fp32) over the dequantised K/V: o (b, 1, h_q, d), lse
        (b, h_q, 1), the workload's shapes."""
        return self.workload.reference(problem, self._dequantised(problem, inputs))

    def reference_lowp(self, problem, inputs: Mapping[str, Any]):
        """The workload's low-precision baseline over K/V dequantised and rounded to Q's type
        (the convert warps multiply value and scale in Q's type, L1162)."""
        return self.workload.reference_lowp(
            problem, self._dequantised(problem, inputs, inputs["q"].dtype)
        )

    def flops_bytes(self, problem: MixedInputAttentionProblem) -> tuple[float, float]:
        """The workload's FLOPs; minimum bytes with K/V at their stored width and their
        scales (Q, O in Q's type and the fp32 LSE as the workload counts them; the split-KV
        workspaces are not counted)."""
        p = problem
        flops, _ = self.workload.flops_bytes(p)
        e = kdtypes.nbytes(p.dtype)
        kv_e = 0.5 if p.kv_dtype == "int4" else kdtypes.nbytes(p.kv_dtype)
        kv = p.b * p.h_kv * p.sk * (p.d_qk + p.d_v)
        scales = p.b * p.h_kv * p.sk * (p.d_qk + p.d_v) // p.scale_granularity
        qo = p.b * p.h_q * (p.d_qk + p.d_v)
        return flops, float(kv * kv_e + (scales + qo) * e + p.b * p.h_q * 4)

    # -- the kernel -------------------------------------------------------------------------
    def plan(
        self, problem: MixedInputAttentionProblem, config: MixedInputDecodeConfig, target: Target
    ) -> CuteKernel:
        p = problem
        ght = self._head_tile(p, config)
        cw = self._convert_warpgroups(p, config)
        splits, how = self.kv_splits(p, config, target)
        cvt, kv = self._stages(p, ght)
        mod = load_example(self.source)
        kernel = mod.MixedInputFusedMultiHeadAttentionDecode(
            headdim=p.d_qk,
            block_scaledim=p.scale_granularity,
            grouped_head_tile=ght,
            convert_warpgroups=cw,
        )
        shape = (p.b, p.h_q, p.h_kv, p.sk, p.d_qk)
        names = ("q", "k", "v", "scale_k", "scale_v", "o", "m", "lse")
        names += ("o_partial", "m_partial", "l_partial")
        scale = p.scale()
        return CuteKernel(
            self.name,
            kernel,
            lambda t: (
                shape,
                splits,
                *(_ptr(t[n], ALIGN) for n in names),
                scale,
                1.0,
                STREAM,
            ),  # fmt: skip
            self.tensor_specs(p),
            options=OPTIONS,
            meta={
                "grouped_head_tile": ght,
                "convert_warpgroups": cw,
                "kv_splits": splits,
                "kv_splits_from": how,
                "convert_stages": cvt,
                "kv_stages": kv,
                "reduction_kernel": True,
            },
        )
