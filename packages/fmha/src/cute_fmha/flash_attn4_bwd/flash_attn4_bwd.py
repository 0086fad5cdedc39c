"""Peer: flash-attention's CuTe DSL backward (FA4), ``flash_attn.cute.interface._flash_attn_bwd``.

From the registry (``pip install flash-attn-4``, with ``quack-kernels``, ``apache-tvm-ffi``
and ``torch-c-dlpack-ext``; issue 12 item 3), as the forward peer :mod:`cute_fmha.flash_attn4`;
not a dependency of this workspace: without it :meth:`FlashAttn4Bwd.plan` says so in one line.

What is called, and why not ``flash_attn_func`` + autograd: ``flash_attn_func`` returns a
tensor whose ``FlashAttnFunc.backward`` calls ``_flash_attn_bwd(q, k, v, out, dout, lse,
softmax_scale, causal, softcap, window_size_left=, window_size_right=, ...)`` with the
forward's saved O and LSE (Dao-AILab/flash-attention ``flash_attn/cute/interface.py``, class
``FlashAttnFunc``, method ``backward``, read at commit 004b1a2e41bfc31df23ba37e064a7d1406c3bd1b).
That function takes O and the LSE as arguments, so the launch calls it directly on the
workload's own O and LSE (natural log, (b, h_q, sq) fp32: its layout) and dO, with the
workload's ``dq``, ``dk``, ``dv`` as its ``dq=``, ``dk=``, ``dv=`` outputs: the timed launch is
the backward only (its preprocess kernel (D = rowsum(dO * O), the LSE in log2, dQ accumulator
zeroed), the main kernel, and the fp32-to-dtype postprocess of dQ, and of dK and dV under
GQA), with no forward and no autograd engine, on the current stream (CUDA-graph capturable
as the forward peer is). It is a private name: where an installed version lacks it, or its
keywords differ, the plan falls back to ``flash_attn_func`` + ``torch.autograd.grad`` on a
graph kept from one forward at bind (as :mod:`cute_fmha.sdpa_bwd_common` does) and records
which in the kernel's meta (``launch``).

SMs: its backward asserts compute capability 9.x, 10.x or 11.x ("Unsupported compute
capability. Supported: 9.x, 10.x, 11.x", ``_flash_attn_bwd``'s first lines at that commit:
``FlashAttentionBackwardSm90`` on the H200, ``FlashAttentionBackwardSm100`` on 10.x/11.x); on
9.x it takes no sliding window ("local not supported yet on 9.x") and no varlen. Any other SM
and a window on 9.x are refused here in one line before it is called. Its other refusals
(head dim, dtype, alignment) are its own assertions, raised at the launch as one line.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, ClassVar

from kernelplan import KernelPlan, KernelPlanError, NoConfig, ShapeError, Target, TorchKernel
from kernelplan.workloads.attention import ATTENTION_BWD, AttentionProblem

from ..flash_attn4.flash_attn4 import DTYPES, _flash_attn_func
from ..sdpa_bwd_common import store

#: compute capability majors its backward takes (``_flash_attn_bwd``'s assertion)
MAJORS = (9, 10, 11)
#: the keywords the direct call passes
DIRECT_KW = ("softmax_scale", "causal", "window_size_left", "window_size_right", "dq", "dk", "dv")


def _import():
    """(``_flash_attn_bwd`` or None, ``flash_attn_func``)."""
    flash_attn_func = _flash_attn_func("flash_attn4_bwd")
    try:
        from flash_attn.cute.interface import _flash_attn_bwd
    except ImportError:
        return None, flash_attn_func
    params = inspect.signature(_flash_attn_bwd).parameters
    return (_flash_attn_bwd if all(k in params for k in DIRECT_KW) else None), flash_attn_func


def _major(target: Target | None) -> tuple[int, str]:
    """(compute capability major, SM name) of the target, else of this GPU."""
    if target is not None:
        from kernelplan.device import parse_sm

        num, _ = parse_sm(target.sm)
        return num // 10, target.sm
    import torch

    major, minor = torch.cuda.get_device_capability()
    return major, f"sm_{major}{minor}"


class FlashAttn4Bwd(KernelPlan):
    """flash-attn-4 backward (see the module docstring)."""

    name: ClassVar[str] = "flash_attn4_bwd"
    package: ClassVar[str] = "fmha"
    workload = ATTENTION_BWD
    target_sm: ClassVar[tuple[str, ...]] = ()
    config_type = NoConfig
    description: ClassVar[str] = (
        "flash-attn-4 backward (flash_attn.cute.interface._flash_attn_bwd on the workload's O "
        "and LSE), CuTe DSL; sm_90/sm_100/sm_110"
    )

    def supports(self, problem: AttentionProblem) -> None:
        if problem.dtype not in DTYPES:
            raise ShapeError(f"{self.name} takes dtype {' or '.join(DTYPES)} (got {problem.dtype})")

    def plan(self, problem: AttentionProblem, config: NoConfig, target: Target) -> TorchKernel:
        import torch

        name, p = self.name, problem
        if not torch.cuda.is_available():
            raise KernelPlanError(f"{name}: needs a CUDA GPU (flash-attn-4 has no CPU kernel)")
        major, sm = _major(target)
        if major not in MAJORS:
            raise ShapeError(
                f"{name}: flash-attn-4's backward runs on sm_90, sm_100 and sm_110 only "
                f"(compute capability 9.x, 10.x, 11.x); this target is {sm}"
            )
        windowed = p.left() is not None or (not p.causal and p.right() is not None)
        if windowed and major == 9:
            raise ShapeError(
                f"{name}: flash-attn-4's sm_90 backward takes no sliding window (--window_left "
                f"{p.window_left} --window_right {p.window_right}; 'local not supported yet on "
                "9.x')"
            )
        direct, fwd = _import()
        left = p.left() if windowed else None
        right = (None if p.causal else p.right()) if windowed else None

        def refuse(e: Exception) -> ShapeError:
            msg = " ".join(str(e).split())[:200] or type(e).__name__
            return ShapeError(f"{name}: flash-attn-4's backward refuses: {msg}")

        if direct is not None:

            def run(t: Mapping[str, Any]) -> None:
                try:
                    res = direct(
                        t["q"], t["k"], t["v"], t["o"], t["do"], t["lse"],
                        softmax_scale=p.scale(), causal=p.causal,
                        window_size_left=left, window_size_right=right,
                        dq=t["dq"], dk=t["dk"], dv=t["dv"],
                    )  # fmt: skip
                except (AssertionError, ValueError, NotImplementedError) as e:
                    raise refuse(e) from None
                for n, g in zip(("dq", "dk", "dv"), res, strict=False):
                    if g is not None and g is not t[n]:
                        t[n] = g  # type: ignore[index]

            meta = {"launch": "flash_attn.cute.interface._flash_attn_bwd on the workload's O, LSE"}
            return TorchKernel(name, run, meta=meta)

        def setup(t: Mapping[str, Any]):
            q, k, v = (t[n].detach().requires_grad_(True) for n in ("q", "k", "v"))
            side = torch.cuda.Stream(device=q.device)
            side.wait_stream(torch.cuda.current_stream(q.device))
            try:
                with torch.cuda.stream(side), torch.enable_grad():
                    res = fwd(q, k, v, softmax_scale=p.scale(), causal=p.causal,
                              window_size=(left, right))  # fmt: skip
            except (AssertionError, ValueError, NotImplementedError) as e:
                raise refuse(e) from None
            torch.cuda.current_stream(q.device).wait_stream(side)
            out = res[0] if isinstance(res, tuple) else res
            return out, (q, k, v), t["do"]

        def run_autograd(t: Mapping[str, Any], state) -> None:
            out, leaves, do = state
            dq, dk, dv = torch.autograd.grad(out, leaves, grad_outputs=do, retain_graph=True)
            store(t, dq, dk, dv)

        meta = {"launch": "torch.autograd.grad of flash_attn_func's forward run once at bind"}
        return TorchKernel(name, run_autograd, meta=meta, setup=setup)
