"""Peer: flash-attention's CuTe DSL kernels (FA4), ``flash_attn.cute.flash_attn_func``.

From the registry (``pip install flash-attn-4``; it needs ``quack-kernels``,
``apache-tvm-ffi`` and ``torch-c-dlpack-ext``, issue 12 item 3); not a dependency of this
workspace, so on a machine without it :meth:`FlashAttn4.plan` says so in one line. It picks
its kernel by the device (``FlashAttentionForwardSm90`` on the H200) and compiles on its first
call (``cute.compile`` memoised inside flash_attn), which the harness's warm-up absorbs.

How the workload maps onto it: Q, K, V in the workload's BSHD layout as they are (its native
layout, GQA by ``h_q % h_kv == 0`` with the same grouping); ``causal`` is its own
(bottom-right aligned, the workload's rule); a window goes in as ``window_size=(left,
right)`` with None for unbounded; ``softmax_scale``. It allocates O (b, sq, h_q, d_v) and the
LSE (b, h_q, sq), natural log, the workload's layouts: the launch stores them as ``o`` and
``lse`` in the tensors it was given (no copy), where the check reads them. Where its version
takes ``return_lse`` the launch asks for the LSE; a build that returns none fails the check
on ``lse`` (left poisoned) rather than passing on ``o`` alone.

Refusals are its own assertions (head dim, dtype, divisibility), raised at the launch as one
line.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, ClassVar

from kernelplan import KernelPlan, NoConfig, ShapeError, Target, TorchKernel
from kernelplan.errors import NotInstalled
from kernelplan.workloads.attention import ATTENTION_FWD, AttentionProblem

DTYPES = ("float16", "bfloat16")


def _flash_attn_func(who: str = "flash_attn4"):
    """``flash_attn.cute.flash_attn_func``, or NotInstalled naming ``who`` (the forward and the
    backward implementation) and what to install."""
    try:
        from flash_attn.cute import flash_attn_func
    except ImportError as e:
        raise NotInstalled(
            f"{who}: flash-attn-4 is not installed here ({e.msg}); on a GPU host: "
            "pip install flash-attn-4 quack-kernels apache-tvm-ffi torch-c-dlpack-ext"
        ) from None
    return flash_attn_func


class FlashAttn4(KernelPlan):
    """flash-attn-4 forward (see the module docstring)."""

    name: ClassVar[str] = "flash_attn4"
    package: ClassVar[str] = "fmha"
    workload = ATTENTION_FWD
    target_sm: ClassVar[tuple[str, ...]] = ()
    config_type = NoConfig
    description: ClassVar[str] = "flash-attn-4 (flash_attn.cute.flash_attn_func), CuTe DSL"

    def supports(self, problem: AttentionProblem) -> None:
        if problem.dtype not in DTYPES:
            raise ShapeError(f"{self.name} takes dtype {' or '.join(DTYPES)} (got {problem.dtype})")

    def plan(self, problem: AttentionProblem, config: NoConfig, target: Target) -> TorchKernel:
        fn = _flash_attn_func()
        p = problem
        params = inspect.signature(fn).parameters
        kw: dict[str, Any] = {"softmax_scale": p.scale(), "causal": p.causal}
        if p.left() is not None or (not p.causal and p.right() is not None):
            kw["window_size"] = (p.left(), None if p.causal else p.right())
        if "return_lse" in params:
            kw["return_lse"] = True
        name = self.name

        def run(t: Mapping[str, Any]) -> None:
            try:
                res = fn(t["q"], t["k"], t["v"], **kw)
            except (AssertionError, ValueError, NotImplementedError) as e:
                msg = " ".join(str(e).split())[:200] or type(e).__name__
                raise ShapeError(f"{name}: flash_attn_func refuses: {msg}") from None
            out, lse = (res[0], res[1]) if isinstance(res, tuple) else (res, None)
            t["o"] = out  # type: ignore[index]
            if lse is not None:
                t["lse"] = lse  # type: ignore[index]

        return TorchKernel(self.name, run)
