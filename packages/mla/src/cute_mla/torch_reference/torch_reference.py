"""Peer: MLA decode as a plain eager PyTorch program, the floor of the table.

What a straightforward PyTorch implementation does, batched over the whole problem in the
inputs' dtype, with no custom kernel:

1. gather every sequence's pages through the page table into one padded (B, L, 576) tensor
   (L = table columns x page), and zero the rows past each sequence's length (they hold NaN
   in a check, and a masked P of 0 times a NaN V row would still be NaN); with the FP8
   latent cache (``kv_dtype``) the gathered latent values, scales and rope rows are
   dequantised to the inputs' dtype first (exact: power-of-two scales), what a kernel that
   dequantises on chip feeds its MMAs;
2. S = Q K^T with batched GEMMs (``torch.bmm``), fp32 accumulate and fp32 output
   (``out_dtype=torch.float32`` on CUDA; on the CPU, or a torch without that overload, the
   operands are upcast to fp32 instead: the same products and sums), times the
   softmax scale; keys past the end, and with ``causal`` and s > 1 keys after the query's
   position, set to -inf;
3. the softmax in fp32 (``logsumexp`` gives the LSE, natural log), P rounded to the inputs'
   dtype;
4. O = P V with a batched GEMM in the inputs' dtype (cuBLAS: fp32 accumulate), written to
   ``o``; a query that sees no key gets o = 0 and lse = -inf (the workload's convention).

No host synchronisation (the lengths stay on the device), so it can be timed with CUDA-graph
replay. It moves the padded KV through memory several times (gather, mask, two GEMMs) and
materialises S and P: that cost, against the workload's minimum bytes, is what the
purpose-built kernels of the table remove.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kernelplan import KernelPlan, NoConfig, ShapeError, Target, TorchKernel
from kernelplan.workloads.mla_decode import MLA_DECODE, MlaDecodeProblem, dequantize_kv

#: Q/cache dtypes it takes: torch's batched GEMMs have no fp8 path
DTYPES = ("bfloat16", "float16", "float32")


def bmm_fp32_out_available() -> bool:
    """Whether this torch has ``torch.bmm(..., out_dtype=torch.float32)`` for half inputs on
    the GPU (fp32 accumulate and output from bf16/fp16 operands)."""
    import torch

    if not torch.cuda.is_available():
        return False
    a = torch.zeros((1, 8, 8), dtype=torch.bfloat16, device="cuda")
    try:
        return torch.bmm(a, a, out_dtype=torch.float32).dtype == torch.float32
    except (RuntimeError, TypeError):
        return False


def mla_decode_torch(
    problem: MlaDecodeProblem, t: Mapping[str, Any], fp32_out: bool = True
) -> None:
    """Writes ``t["o"]`` and ``t["lse"]`` from the workload's input tensors (any device).
    ``fp32_out``: use ``bmm(..., out_dtype=float32)`` for S on the GPU (else the operands are
    upcast: the same products and fp32 sums, through an fp32 GEMM)."""
    import torch

    p = problem
    q, cache, table, seqlens = t["q"], t["kv_cache"], t["page_table"], t["seqlens"]
    b, s, h, d = q.shape
    dev, dt = q.device, q.dtype
    n_keys = table.shape[1] * p.page
    idx = table.clamp_min(0).long()
    if p.kv_fp8:  # the FP8 latent cache, dequantised to dt (exact)
        kv = dequantize_kv(p, cache[idx], t["kv_scales"][idx], t["kv_rope"][idx], dt)
        kv = kv.reshape(b, n_keys, d)
    else:
        kv = cache[idx].reshape(b, n_keys, d)  # (B, L, 576)
    pos = torch.arange(n_keys, device=dev)
    lens = seqlens.long()
    kv = kv.masked_fill((pos.view(1, n_keys) >= lens.view(b, 1)).unsqueeze(-1), 0)

    qm = q.reshape(b, s * h, d)
    if fp32_out and dev.type == "cuda" and dt in (torch.float16, torch.bfloat16):
        scores = torch.bmm(qm, kv.transpose(1, 2), out_dtype=torch.float32)
    else:
        scores = torch.bmm(qm.float(), kv.float().transpose(1, 2))
    scores = scores.view(b, s, h, n_keys).mul_(p.scale())
    # last key each query sees: len - 1, or len - s + r for query r of s with causal
    shift = torch.arange(s, device=dev) - (s - 1) if (p.causal and s > 1) else None
    last = lens.view(b, 1) - 1 + (shift.view(1, s) if shift is not None else 0)
    hidden = pos.view(1, 1, n_keys) > last.view(b, -1, 1)  # (B, s or 1, L)
    scores.masked_fill_(hidden.unsqueeze(2), float("-inf"))

    lse = torch.logsumexp(scores, dim=-1)  # (B, s, h), -inf where no key is seen
    safe = torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse))
    probs = torch.exp(scores - safe.unsqueeze(-1)).to(dt)  # 0 where masked
    out = torch.bmm(probs.view(b, s * h, n_keys), kv[..., : p.d_latent])
    t["o"].copy_(out.view(b, s, h, p.d_latent))
    t["lse"].copy_(lse)


class TorchReference(KernelPlan):
    """Eager PyTorch MLA decode (see the module docstring): runs on any CUDA GPU (and on the
    CPU, for the tests)."""

    name: ClassVar[str] = "torch_reference"
    package: ClassVar[str] = "mla"
    workload = MLA_DECODE
    target_sm: ClassVar[tuple[str, ...]] = ()
    config_type = NoConfig
    description: ClassVar[str] = (
        "eager PyTorch MLA decode (bmm in the inputs' dtype, fp32 softmax): the floor"
    )

    def supports(self, problem: MlaDecodeProblem) -> None:
        # the FP8 latent cache (kv_dtype) is taken: dequantised to the 16-bit dtype at gather
        if problem.dtype not in DTYPES:
            raise ShapeError(
                f"{self.name} does not take dtype {problem.dtype} (torch.bmm has no fp8 path); "
                f"it takes {', '.join(DTYPES)}"
            )

    def plan(self, problem: MlaDecodeProblem, config: NoConfig, target: Target) -> TorchKernel:
        fp32_out = bmm_fp32_out_available()  # probed once here, not in the timed launches
        return TorchKernel(self.name, lambda t: mla_decode_torch(problem, t, fp32_out))
