"""PyTorch ``scaled_dot_product_attention`` backward peers (``attention_bwd``), one
implementation per backend, as the forward peers in :mod:`cute_fmha.sdpa_common` are.

What is timed, and why autograd: SDPA has no public backward entry point. Its backends'
backward ops (``aten::_scaled_dot_product_{flash,efficient,cudnn}_attention_backward``) are
internal, each with its own saved state (its own LSE layout and padding, philox seed and
offset, cuDNN's stats), and the math backend has none (its backward is the autograd of the
matmuls and softmax it decomposes into). So each implementation runs SDPA's forward ONCE per
input set, at bind (``TorchKernel.setup``, outside every timed launch), with Q, K, V as
leaves that require grad, keeps that graph, and the timed launch is only::

    dq, dk, dv = torch.autograd.grad(out, (q, k, v), grad_outputs=do, retain_graph=True)

which dispatches exactly the backward kernels of the backend the forward picked (forced with
``sdpa_kernel([backend])``), no forward. The backward therefore uses SDPA's own O and LSE
from that forward (the same numbers as the workload's O and LSE up to rounding; the check
compares dQ, dK, dV against the workload's fp32 reference computed from Q, K, V, dO).

CUDA graphs: the autograd engine runs each backward op on the stream its forward op ran on.
A forward on the legacy default stream would put the backward there, which a graph captured
on the timing's side stream cannot record. So on a GPU the forward runs on a stream of its
own (made at bind); the engine joins that stream to the caller's stream at the start and end
of ``autograd.grad`` (events), the fork/join a capture follows. NOT yet run on a GPU: if a
capture still fails, ``kernelplan.alternate --cuda-graph`` leaves the implementation out
with one line ("CUDA graph capture failed") and scripts/device/fmha-table.sh's ``bwd`` step
times those without graphs.

The mapping of the workload onto SDPA (transposed BSHD views, ``enable_gqa``, the
bottom-right causal bias for ``sq != sk``, a sliding window as a boolean mask, ``scale=``)
is the forward peers'. The grads come back in the leaves' BSHD shape; the launch stores them
as ``dq``, ``dk``, ``dv`` in the tensors it was given, where the check reads them
(:func:`store`: no copy where they are contiguous). ``o`` and ``lse`` are the workload's
inputs and stay unread.

The math backend runs on the CPU as well (the unit tests); the flash, cuDNN and
memory-efficient backends need a CUDA GPU and say so in one line at ``plan()`` on a host
without one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kernelplan import KernelPlan, KernelPlanError, NoConfig, ShapeError, Target, TorchKernel
from kernelplan.workloads.attention import ATTENTION_BWD, AttentionProblem

from .sdpa_common import call_sdpa, sdpa_kwargs

#: what one timed launch is, recorded with every run (``kernel_meta``)
LAUNCH = (
    "torch.autograd.grad(out, (q, k, v), do, retain_graph=True) of SDPA's forward run once "
    "at bind (backward kernels only; a grad that is not contiguous BSHD copied to the output)"
)


def store(t: Any, dq: Any, dk: Any, dv: Any) -> None:
    """The grads as the launch's outputs: a contiguous (BSHD) grad is stored as it is (no
    copy; the flash, memory-efficient and cuDNN backward kernels allocate theirs in the
    layout of their BSHD-strided inputs), any other is copied into the workload's output
    tensor (the math backend's come back as transposed (b, h, s, d) views: one copy each, in
    the timed launch of the floor; the check and a planted ``perturb`` read the outputs as
    contiguous BSHD)."""
    for n, g in (("dq", dq), ("dk", dk), ("dv", dv)):
        if g.is_contiguous():
            t[n] = g
        else:
            t[n].copy_(g)


class SdpaBwdPeer(KernelPlan):
    """Base of the four SDPA backward backends (see the module docstring)."""

    package: ClassVar[str] = "fmha"
    workload = ATTENTION_BWD
    target_sm: ClassVar[tuple[str, ...]] = ()
    config_type = NoConfig
    #: the ``torch.nn.attention.SDPBackend`` member name
    backend: ClassVar[str]
    #: whether the backend has a CPU kernel (only MATH)
    cpu_ok: ClassVar[bool] = False

    def plan(self, problem: AttentionProblem, config: NoConfig, target: Target) -> TorchKernel:
        import torch

        name, bname = self.name, self.backend
        if not self.cpu_ok and not torch.cuda.is_available():
            raise KernelPlanError(
                f"{name}: needs a CUDA GPU (SDPA's {bname} backend has no CPU kernel)"
            )
        p = problem

        def setup(t: Mapping[str, Any]):
            q, k, v = (t[n].detach().requires_grad_(True) for n in ("q", "k", "v"))
            if q.is_cuda:
                side = torch.cuda.Stream(device=q.device)
                side.wait_stream(torch.cuda.current_stream(q.device))
                ctx = torch.cuda.stream(side)
            elif not self.cpu_ok:
                raise KernelPlanError(f"{name}: needs a CUDA GPU (got tensors on {q.device})")
            else:
                side, ctx = None, torch.enable_grad()
            kw = sdpa_kwargs(p, q.device)
            with ctx, torch.enable_grad():
                out = call_sdpa(
                    name, bname, q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), kw
                )
            if side is not None:
                torch.cuda.current_stream(q.device).wait_stream(side)
            return out, (q, k, v), t["do"].transpose(1, 2)

        def run(t: Mapping[str, Any], state) -> None:
            out, leaves, do = state
            try:
                dq, dk, dv = torch.autograd.grad(out, leaves, grad_outputs=do, retain_graph=True)
            except RuntimeError as e:
                if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
                    raise  # a capture failure: alternate reports it and leaves this out
                msg = " ".join(str(e).split())[:200]
                raise ShapeError(f"{name}: SDPA's {bname} backward fails: {msg}") from None
            store(t, dq, dk, dv)

        return TorchKernel(self.name, run, meta={"backend": bname, "launch": LAUNCH}, setup=setup)
