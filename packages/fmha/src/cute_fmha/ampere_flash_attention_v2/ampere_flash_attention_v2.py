"""Adapter: the CUTLASS Ampere flash attention v2 forward (cp.async + mma.sync, sm_80).

Upstream: ``examples/python/CuTeDSL/cute/ampere/kernel/attention/flash_attention_v2.py``, class
``FlashAttentionForwardAmpere(head_dim, m_block_size, n_block_size, num_threads, is_causal)``
(L96), called as ``(mQ, mK, mV, mO, softmax_scale, stream)`` (L180). Grid (m blocks, batch,
heads); one CTA of ``num_threads`` threads per 128-row (``m_block_size``) query tile, K/V
tiles of ``n_block_size`` rows walked from the last to the first.

Tensors: Q, K, V, O in the workload's BSHD storage as they are (``run()``'s
``create_tensor`` L1197: (b, s, h, d) with the stride-1 d mode dynamic and marked divisible by
128 bits / element width = 8, which :class:`~kernelplan.TensorSpec` ``divisibility`` gives).
The example writes no LSE: this implementation leaves ``lse`` out of its tensors, so its check
judges ``o`` only.

What it takes (upstream ``can_implement`` L133, called by :meth:`supports_config`, and the
kernel body):

- fp16 or bf16; head dim a multiple of 8 (one d for Q/K and V);
- MHA only: K and V are indexed by the query's own head (``mK[batch_size, None, num_head,
  None]``, L401), so ``h_kv`` must equal ``h_q``;
- causal only with ``sq == sk``: the causal bound is ``(m_block + 1) * m_block_size`` keys
  (L389-L396), i.e. top-left aligned, which is the workload's bottom-right mask only when
  ``sq == sk``; no sliding window;
- Q tile + two K/V tiles within sm_80's shared memory; ``2 * m_block_size`` divisible by
  ``num_threads``.

Target sm_80: the code uses no Hopper instructions, so it runs on the H200 too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kernelplan import STREAM, Config, CuteKernel, KernelPlan, ShapeError, Target, TensorSpec
from kernelplan.cutlass_src import load_example
from kernelplan.workloads.attention import ATTENTION_FWD, AttentionProblem

DTYPES = ("float16", "bfloat16")


@dataclass(frozen=True)
class AmpereFa2Config(Config):
    """Upstream's tunables and their CLI defaults (``flash_attention_v2.py`` argparse:
    ``--m_block_size 128 --n_block_size 64 --num_threads 128``)."""

    m_block_size: int = 128
    n_block_size: int = 64
    num_threads: int = 128

    def validate(self) -> None:
        for k in ("m_block_size", "n_block_size", "num_threads"):
            v = getattr(self, k)
            if not isinstance(v, int) or v <= 0 or v % 16:
                raise ShapeError(f"{k} must be a positive multiple of 16 (got {v!r})")


class AmpereFlashAttentionV2(KernelPlan):
    """CUTLASS CuTe DSL Ampere flash attention v2 forward (see the module docstring)."""

    name: ClassVar[str] = "ampere_flash_attention_v2"
    package: ClassVar[str] = "fmha"
    workload = ATTENTION_FWD
    source: ClassVar[str] = "cute/ampere/kernel/attention/flash_attention_v2.py"
    target_sm: ClassVar[tuple[str, ...]] = ("sm_80",)
    config_type = AmpereFa2Config
    runtime_problem_fields: ClassVar[tuple[str, ...]] = ("b", "sq", "sk", "softmax_scale")
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL Ampere flash attention v2 forward (cp.async + mma.sync), sm_80"
    )

    def supports(self, problem: AttentionProblem) -> None:
        p = problem
        if p.dtype not in DTYPES:
            raise ShapeError(f"{self.name} takes dtype {' or '.join(DTYPES)} (got {p.dtype})")
        if p.d_qk != p.d_v:
            raise ShapeError(
                f"{self.name} takes one head dim for Q/K and V (got --d_qk {p.d_qk}, --d_v {p.d_v})"
            )
        if p.d_qk % 8:
            raise ShapeError(
                f"{self.name} takes a head dim that is a multiple of 8 (16-byte rows; got "
                f"--d_qk {p.d_qk})"
            )
        if p.h_kv != p.h_q:
            raise ShapeError(
                f"{self.name} takes h_kv == h_q only (MHA: K and V are indexed by the query "
                f"head; got --h_q {p.h_q} --h_kv {p.h_kv})"
            )
        if p.window_left >= 0 or p.window_right >= 0:
            raise ShapeError(f"{self.name} takes no sliding window (--window_left/right -1)")
        if p.causal and p.sq != p.sk:
            raise ShapeError(
                f"{self.name}'s causal mask is top-left aligned: it takes --causal only with "
                f"sq == sk (got sq {p.sq}, sk {p.sk})"
            )

    def supports_config(self, problem: AttentionProblem, config: AmpereFa2Config) -> None:
        from kernelplan import dtypes

        cls = load_example(self.source).FlashAttentionForwardAmpere
        c = config
        if not cls.can_implement(
            dtypes.cute_type(problem.dtype),
            problem.d_qk,
            c.m_block_size,
            c.n_block_size,
            c.num_threads,
            problem.causal,
        ):
            raise ShapeError(
                f"{self.name}: upstream can_implement refuses {c.label()} at d {problem.d_qk} "
                "(shared memory, or 2 * m_block_size not divisible by num_threads)"
            )

    def autotune_configs(self, problem: AttentionProblem) -> list[AmpereFa2Config]:
        out = []
        for m, n, th in ((128, 64, 128), (128, 128, 128), (64, 64, 128), (128, 64, 256)):
            cfg = AmpereFa2Config(m, n, th)
            try:
                self.supports_config(problem, cfg)
            except ShapeError:
                continue
            out.append(cfg)
        return out

    def tensor_specs(self, problem: AttentionProblem) -> dict[str, TensorSpec]:
        """The workload's Q, K, V, O with the d mode dynamic and divisible by 8 elements, as
        upstream marks them; no ``lse`` (the example computes none)."""
        p = problem

        def t(s: int, h: int, role: str = "input", init: str = "randn") -> TensorSpec:
            return TensorSpec(
                (p.b, s, h, p.d_qk), p.dtype, role=role, init=init, leading_dim=3, divisibility=8
            )

        return {
            "q": t(p.sq, p.h_q),
            "k": t(p.sk, p.h_kv),
            "v": t(p.sk, p.h_kv),
            "o": t(p.sq, p.h_q, "output", "empty"),
        }

    def plan(
        self, problem: AttentionProblem, config: AmpereFa2Config, target: Target
    ) -> CuteKernel:
        p, c = problem, config
        mod = load_example(self.source)
        kernel = mod.FlashAttentionForwardAmpere(
            p.d_qk, c.m_block_size, c.n_block_size, c.num_threads, p.causal
        )
        scale = p.scale()
        return CuteKernel(
            self.name,
            kernel,
            lambda t: (t["q"], t["k"], t["v"], t["o"], scale, STREAM),
            self.tensor_specs(p),
        )
