"""PyTorch ``scaled_dot_product_attention`` peers, one implementation per backend.

Each implementation forces its backend with ``torch.nn.attention.sdpa_kernel([backend])``
(flash, cuDNN, memory-efficient, math), so a row of the table is one backend and never a
silent fallback. When the backend refuses the problem (dtype, head dim, a mask it cannot
take, GQA), SDPA raises "No available kernel" and warns why; the launch turns that into one
line naming the backend and its reasons.

How the workload maps onto SDPA:

- Q, K, V are the workload's BSHD tensors seen as (b, h, s, d) with ``transpose(1, 2)`` (no
  copy; SDPA takes strided inputs with a stride-1 d).
- GQA (h_q != h_kv): ``enable_gqa=True`` (SDPA groups consecutive query heads over one KV
  head, the workload's grouping).
- causal: with ``sq == sk``, ``is_causal=True``; with ``sq != sk``, SDPA's ``is_causal`` is
  top-left aligned, so the bottom-right mask of the workload goes in as
  ``torch.nn.attention.bias.causal_lower_right(sq, sk)`` (a ``CausalBias`` the flash and
  memory-efficient backends take natively).
- a sliding window: an explicit boolean ``attn_mask`` (sq, sk) built once in ``plan()``
  (the flash backend takes no explicit mask and refuses).
- the softmax scale: ``scale=``.
- o: SDPA allocates its output (b, h, sq, d_v); the launch stores its BSHD view
  (``transpose(1, 2)``, no copy) as ``o`` in the tensors it was given, where the check reads
  it. SDPA returns no LSE through this API, so ``lse`` is not among these implementations'
  tensors and their check judges ``o`` only.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, ClassVar

from kernelplan import KernelPlan, NoConfig, ShapeError, Target, TensorSpec, TorchKernel
from kernelplan.workloads.attention import ATTENTION_FWD, AttentionProblem, visible_mask


def sdpa_kwargs(problem: AttentionProblem, device: Any) -> dict[str, Any]:
    """``scaled_dot_product_attention`` keywords for the workload's problem (the mapping in
    the module docstring): ``scale``, ``enable_gqa`` for GQA, and the mask: a sliding window
    as a boolean ``attn_mask`` on ``device``, causal with ``sq != sk`` as the bottom-right
    causal bias, else ``is_causal``. Forward and backward peers (:mod:`.sdpa_bwd_common`)."""
    p = problem
    kw: dict[str, Any] = {"scale": p.scale()}
    if p.h_q != p.h_kv:
        kw["enable_gqa"] = True
    if p.left() is not None or (not p.causal and p.right() is not None):
        kw["attn_mask"] = visible_mask(p, device=device)
    elif p.causal and p.sq != p.sk:
        from torch.nn.attention.bias import causal_lower_right

        kw["attn_mask"] = causal_lower_right(p.sq, p.sk)
    else:
        kw["is_causal"] = p.causal
    return kw


def call_sdpa(name: str, backend_name: str, q: Any, k: Any, v: Any, kw: Mapping[str, Any]):
    """``scaled_dot_product_attention(q, k, v, **kw)`` (BHSD views) under SDPA's
    ``backend_name`` backend only; a refusal is one ShapeError line with the backend's own
    warnings (why it refused) or its error."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backend = getattr(SDPBackend, backend_name)
    with warnings.catch_warnings(record=True) as seen, sdpa_kernel([backend]):
        warnings.simplefilter("always")
        try:
            return F.scaled_dot_product_attention(q, k, v, **kw)
        except RuntimeError as e:
            why = (
                "; ".join(" ".join(str(w.message).split())[:160] for w in seen[:3])
                or " ".join(str(e).split())[:200]
            )
            raise ShapeError(f"{name}: SDPA's {backend_name} backend refuses: {why}") from None


class SdpaPeer(KernelPlan):
    """Base of the four SDPA backends (see the module docstring)."""

    package: ClassVar[str] = "fmha"
    workload = ATTENTION_FWD
    target_sm: ClassVar[tuple[str, ...]] = ()
    config_type = NoConfig
    #: the ``torch.nn.attention.SDPBackend`` member name
    backend: ClassVar[str]

    def tensor_specs(self, problem: AttentionProblem) -> dict[str, TensorSpec]:
        """The workload's tensors less ``lse`` (SDPA returns none)."""
        specs = self.workload.tensor_specs(problem)
        specs.pop("lse")
        return specs

    def plan(self, problem: AttentionProblem, config: NoConfig, target: Target) -> TorchKernel:
        p = problem
        name, bname = self.name, self.backend
        kw_cache: dict[Any, dict[str, Any]] = {}  # per device: the window mask built once

        def run(t: Mapping[str, Any]) -> None:
            q, k, v = (t[n].transpose(1, 2) for n in ("q", "k", "v"))
            if q.device not in kw_cache:
                kw_cache[q.device] = sdpa_kwargs(p, q.device)
            out = call_sdpa(name, bname, q, k, v, kw_cache[q.device])
            t["o"] = out.transpose(1, 2)  # type: ignore[index]

        return TorchKernel(self.name, run)
