"""The Mamba2 SSD workload: the selective state-space scan of Mamba-2 (the "state space
duality" layer's core), forward, with its final state.

Per batch b and head h (head h reads the B/C of group ``h // (heads / groups)``), over time t::

    state_t = exp(dt_t * A_h) * state_{t-1} + dt_t * x_t B_t^T      (state: head_dim x d_state)
    y_t     = state_t C_t + D_h * x_t                                 (state_{-1} = 0)

and ``final_state`` is the state after the last step. ``dt`` is taken as given (already
positive: the softplus and bias of the Mamba-2 layer are outside the scan), ``A`` is one
negative number per head, ``D`` the skip term: per head and channel ("vector"), per head
("scalar") or absent ("none").

The definition follows the CUTLASS example's reference, which names its source
(``cute/blackwell/kernel/attention/mamba2_ssd/mamba2_ssd_reference.py`` L33-L97: X scaled by
dt, A = dt * a per head, then ``ssd_minimal_discrete`` of state-spaces/mamba, L265-L320, and
the D term, L83-L87); the reference here is this project's own chunked evaluation of the
recurrence above in float32 (:func:`ssd_scan`).

Layout: time-contiguous, as the CUTLASS example stores every tensor (its ``run``,
``mamba2_ssd.py`` L3336-L3405): x and y (B, H, P, T), dt (B, H, T), B and C (B, G, N, T), A
(H,), D (H, P) or (H, 1), final_state (B, H, P, N) (mamba_ssm's own layout, (B, T, H, P), is a
transpose of it). ``chunk_len`` is the block length of the chunked (dual) form the kernels
tile time by; the outputs do not depend on it, the FLOP count does.

Implementations: ``cute_mamba2`` (the CUTLASS Blackwell SSD kernel, sm_100a).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ..kernel import TensorSpec
from ..workload import Problem, ShapeError, Workload

D_SKIP = ("vector", "scalar", "none")


@dataclass(frozen=True)
class SsdProblem(Problem):
    """One SSD scan (defaults: the CUTLASS example's ``--gbehcdln 2,4,2,40,32,64,128,128``:
    G=2, B=4, E*H=80 heads, C*L = 32*128 steps, D=64, N=128).

    Args:
        batch: sequences.
        seqlen: time steps (a multiple of chunk_len).
        heads: heads (the example's E*H).
        groups: B/C groups (heads share them in runs of heads/groups).
        head_dim: channels per head (P; the example's D).
        d_state: state size (N).
        chunk_len: block length of the chunked form (the example's L).
        d_skip: the D term: "vector" (H, P), "scalar" (H,), "none".
        dtype: x, dt, A, B, C, D, y, final_state.
    """

    batch: int = 4
    seqlen: int = 4096
    heads: int = 80
    groups: int = 2
    head_dim: int = 64
    d_state: int = 128
    chunk_len: int = 128
    d_skip: Literal["vector", "scalar", "none"] = "vector"
    dtype: str = "bfloat16"

    def validate(self) -> None:
        for key in ("batch", "seqlen", "heads", "groups", "head_dim", "d_state", "chunk_len"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ShapeError(f"--{key} must be a positive integer (got {v})")
        if self.heads % self.groups:
            raise ShapeError(f"--heads {self.heads} is not a multiple of --groups {self.groups}")
        if self.seqlen % self.chunk_len:
            raise ShapeError(
                f"--seqlen {self.seqlen} is not a multiple of --chunk_len {self.chunk_len}"
            )
        if self.d_skip not in D_SKIP:
            raise ShapeError(f"--d_skip {self.d_skip}: one of {', '.join(D_SKIP)}")
        if self.dtype not in ("float16", "bfloat16", "float32"):
            raise ShapeError(f"--dtype {self.dtype}: float16, bfloat16 or float32")

    @property
    def chunks(self) -> int:
        return self.seqlen // self.chunk_len


class SsdWorkload(Workload):
    """See the module docstring."""

    name: ClassVar[str] = "ssd"
    problem_type: ClassVar[type[Problem]] = SsdProblem
    description: ClassVar[str] = "Mamba2 SSD scan: y, final_state from x, dt, A, B, C, D"

    def tensor_specs(self, problem: SsdProblem) -> dict[str, TensorSpec]:
        p = problem
        specs = {
            "x": TensorSpec((p.batch, p.heads, p.head_dim, p.seqlen), p.dtype, scale=0.5),
            "dt": TensorSpec((p.batch, p.heads, p.seqlen), p.dtype),
            "a": TensorSpec((p.heads,), p.dtype),
            "b": TensorSpec((p.batch, p.groups, p.d_state, p.seqlen), p.dtype, scale=0.5),
            "c": TensorSpec((p.batch, p.groups, p.d_state, p.seqlen), p.dtype, scale=0.5),
        }
        if p.d_skip != "none":
            cols = p.head_dim if p.d_skip == "vector" else 1
            specs["d"] = TensorSpec((p.heads, cols), p.dtype, scale=0.5)
        specs["y"] = TensorSpec(specs["x"].shape, p.dtype, role="output", init="empty")
        specs["final_state"] = TensorSpec(
            (p.batch, p.heads, p.head_dim, p.d_state), p.dtype, role="output", init="empty"
        )
        return specs

    def prepare_inputs(self, problem, specs, seed: int, device: str = "cuda") -> dict[str, Any]:
        """x, B, C, D from N(0, 0.5^2); dt = softplus(N(0, 0.5^2) - 4) and A = -exp(N(0,
        0.5^2)), as the example draws them (``mamba2_ssd.py`` L3338-L3350)."""
        import torch
        import torch.nn.functional as F

        out = super().prepare_inputs(problem, specs, seed, device)
        g = torch.Generator(device=device)
        g.manual_seed(seed + 1)
        to = getattr(torch, problem.dtype)
        z = torch.randn(specs["dt"].shape, generator=g, device=device) * 0.5
        out["dt"] = F.softplus(z - 4).to(to)
        out["a"] = (-torch.exp(torch.randn((problem.heads,), generator=g, device=device) * 0.5)).to(
            to
        )
        return out

    def reference(self, problem: SsdProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        return ssd_scan(problem, inputs)

    def reference_lowp(self, problem: SsdProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The fp32 result rounded once to ``dtype`` (what a PyTorch program storing its
        outputs in the inputs' type gets at best)."""
        import torch

        to = getattr(torch, problem.dtype)
        return {n: t.to(to).float() for n, t in ssd_scan(problem, inputs).items()}

    def flops_bytes(self, problem: SsdProblem) -> tuple[float, float]:
        """The chunked form at ``chunk_len`` Q, per (batch, chunk): C B^T per group
        (2 Q^2 N); per head the masked product with x (2 Q^2 P), the chunk's state
        contribution and the inter-chunk output (2 Q N P each), the state passing (2 P N).
        Bytes: every input read once, y and final_state written once."""
        p, q = problem, problem.chunk_len
        per_chunk = p.groups * 2 * q * q * p.d_state + p.heads * (
            2 * q * q * p.head_dim + 4 * q * p.d_state * p.head_dim + 2 * p.head_dim * p.d_state
        )
        nbytes = sum(s.nbytes() for s in self.tensor_specs(p).values())
        return float(p.batch * p.chunks * per_chunk), float(nbytes)

    def check_problems(self) -> list[SsdProblem]:
        """Small ones: several chunks so the state is carried; groups < heads; each D mode."""
        base = SsdProblem(batch=2, seqlen=512, heads=8, groups=2)
        return [base, base.replace(d_skip="scalar", groups=1), base.replace(d_skip="none", batch=1)]

    def profile_problems(self) -> list[SsdProblem]:
        return [SsdProblem()]

    def compute_dtype(self, problem: SsdProblem) -> str:
        return problem.dtype


def ssd_scan(p: SsdProblem, inputs: Mapping[str, Any], block: int = 64) -> dict[str, Any]:
    """The recurrence of the module docstring in float32, evaluated in blocks of ``block``
    steps: within a block the quadratic (masked decay) form, across blocks the state.
    Returns y (B, H, P, T) and final_state (B, H, P, N)."""
    import torch

    f = torch.float32
    x = inputs["x"].to(f)  # (B, H, P, T)
    dt = inputs["dt"].to(f)  # (B, H, T)
    a = inputs["a"].to(f)  # (H,)
    rep = p.heads // p.groups
    bm = inputs["b"].to(f).repeat_interleave(rep, dim=1)  # (B, H, N, T)
    cm = inputs["c"].to(f).repeat_interleave(rep, dim=1)
    state = torch.zeros((p.batch, p.heads, p.head_dim, p.d_state), dtype=f, device=x.device)
    y = torch.empty_like(x)
    blk = min(block, p.seqlen)
    for t0 in range(0, p.seqlen, blk):
        sl = slice(t0, min(t0 + blk, p.seqlen))
        xs, dts, bs, cs = x[..., sl], dt[..., sl], bm[..., sl], cm[..., sl]
        q = xs.shape[-1]
        acum = torch.cumsum(dts * a.view(1, -1, 1), dim=-1)  # (B, H, q), decreasing
        diff = acum.unsqueeze(-1) - acum.unsqueeze(-2)  # [t, s] = acum_t - acum_s
        causal = torch.ones(q, q, dtype=torch.bool, device=x.device).tril()
        decay = torch.exp(diff.masked_fill(~causal, float("-inf")))  # (B, H, q, q)
        scores = torch.einsum("bhnt,bhns->bhts", cs, bs) * decay * dts.unsqueeze(-2)
        y_in = torch.einsum("bhts,bhps->bhpt", scores, xs)
        y_st = torch.einsum("bhnt,bhpn->bhpt", cs, state) * torch.exp(acum).unsqueeze(-2)
        y[..., sl] = y_in + y_st
        tail = torch.exp(acum[..., -1:] - acum) * dts  # (B, H, q)
        state = state * torch.exp(acum[..., -1]).view(p.batch, p.heads, 1, 1) + torch.einsum(
            "bhps,bhns->bhpn", xs * tail.unsqueeze(-2), bs
        )
    if p.d_skip != "none":
        d = inputs["d"].to(f)  # (H, P) or (H, 1)
        y = y + x * d.view(1, p.heads, -1, 1)
    return {"y": y, "final_state": state}


SSD = SsdWorkload()

__all__ = ["SSD", "SsdProblem", "SsdWorkload", "ssd_scan"]
