"""Blockwise-scaled FP8 GEMM (DeepSeek-style 1x128 / 128x128 scales): the problem, the scale
tensors, the dequantising reference, and the contiguous grouped variant
(:class:`GroupedBlockwiseGemmProblem`: its group sizes stated in the problem, drawn from a
seed when not given); shared by this package's implementations.

The operator is the GEMM workload's (TN) on dequantised operands (upstream's module docstring,
``blockwise_gemm.py`` L46-L53, and its reference, L2737-L2769)::

    A_f[m, k, l] = A[m, k, l] * SFA[m, k // 128, l]            (1 x 128 groups of A's rows)
    B_f[n, k, l] = B[n, k, l] * SFB[n // 128, k // 128, l]     (128 x 128 blocks of B)
    C = A_f @ B_f^T, fp32 accumulation, stored in c_dtype

with fp8 E4M3 A/B and fp32 scales. The format is taken from that reference code
(``pad_and_multiply``, L2737-L2760: the scale of element (m, k) is ``scale[m // 128 if the
scale has ceil(M/128) rows else m, k // 128]``; upstream allows no other granularity, L2747),
and the tensors from ``create_tensors`` (L2568-L2612): SFA (M, ceil(K/128), L) M-major, SFB
(ceil(N/128), ceil(K/128), L) K-major. So the problem is :class:`BlockwiseGemmProblem`, the
workload's problem with the scaling mode stated (``KernelPlan.problem_type``); the
granularity is fixed at 128 by the kernels and written as a field so that a problem states it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from cute_gemm.blackwell_common import resolve_group_sizes

from kernelplan import ShapeError, TensorSpec
from kernelplan.workloads.gemm import GemmProblem

AB_DTYPES = ("float8_e4m3fn",)
C_DTYPES = ("bfloat16", "float16", "float32")
#: the scale granularity the kernels take (upstream L2747: "Only support granularity = 128")
GRANULARITY = 128


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class BlockwiseGemmProblem(GemmProblem):
    """The GEMM problem with blockwise fp32 scales: ``dtype`` A's and B's (fp8 E4M3),
    ``c_dtype`` C's.

    Args:
        scale_block: K (and B's N) extent sharing one scale: 128, the only one the kernels
            take; stated so that a problem says its scaling mode.
    """

    m: int = 256
    n: int = 256
    k: int = 512
    dtype: str = "float8_e4m3fn"
    c_dtype: str | None = "bfloat16"
    init: Literal["randn", "randint"] = "randint"
    scale_block: int = GRANULARITY

    def validate(self) -> None:
        for key in ("m", "n", "k", "l"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ShapeError(f"--{key} must be a positive integer (got {v})")
        if self.c_dtype is None:
            object.__setattr__(self, "c_dtype", "bfloat16")
        if self.dtype not in AB_DTYPES:
            raise ShapeError(f"--dtype {self.dtype}: one of {', '.join(AB_DTYPES)}")
        if self.c_dtype not in C_DTYPES:
            raise ShapeError(f"--c_dtype {self.c_dtype}: one of {', '.join(C_DTYPES)}")
        if self.scale_block != GRANULARITY:
            raise ShapeError(
                f"--scale_block {self.scale_block}: the blockwise kernels take 128 only "
                "(1x128 A groups, 128x128 B blocks)"
            )


def sfa_spec(m: int, k: int, l: int) -> TensorSpec:
    """SFA (M, ceil(K/128), L), M-major: storage (L, KB, M)."""
    return TensorSpec(
        (l, ceil_div(k, GRANULARITY), m), "float32", perm=(2, 1, 0), leading_dim=0, init="zeros"
    )


def sfb_spec(n: int, k: int, l: int) -> TensorSpec:
    """SFB (ceil(N/128), ceil(K/128), L), K-major: storage (L, NB, KB)."""
    return TensorSpec(
        (l, ceil_div(n, GRANULARITY), ceil_div(k, GRANULARITY)),
        "float32",
        perm=(1, 2, 0),
        leading_dim=1,
        init="zeros",
    )


def operand(rows: int, cols: int, l: int, dtype: str, **kw: Any) -> TensorSpec:
    return TensorSpec((l, rows, cols), dtype, perm=(1, 2, 0), leading_dim=1, **kw)


def tensor_specs(p: BlockwiseGemmProblem) -> dict[str, TensorSpec]:
    """A, B, C as the workload's (dynamic, 16-byte aligned, upstream's ``cute_tensor_like(...,
    assumed_align=16)``) and the two scale tensors; upstream's argument order a, b, c, sfa, sfb."""
    return {
        "a": operand(p.m, p.k, p.l, p.dtype, init="zeros"),
        "b": operand(p.n, p.k, p.l, p.dtype, init="zeros"),
        "c": operand(p.m, p.n, p.l, p.c_dtype, role="output", init="empty"),
        "sfa": sfa_spec(p.m, p.k, p.l),
        "sfb": sfb_spec(p.n, p.k, p.l),
    }


def draw_operand(shape, dtype: str, init: str, g, device: str):
    """Integers in [-2, 2] (``randint``, as upstream's ``cutlass_torch.matrix``) or N(0, 1),
    rounded to ``dtype``."""
    import torch

    if init == "randint":
        x = torch.randint(-2, 3, shape, generator=g, device=device).float()
    else:
        x = torch.randn(shape, generator=g, device=device)
    return x.to(getattr(torch, dtype))


def draw_scales(shape, g, device: str):
    """fp32 scales 2^[-3, 3] times U(1, 2): not powers of two only, so a scale applied to the
    wrong block changes the result."""
    import torch

    e = torch.randint(-3, 4, shape, generator=g, device=device).float()
    return torch.exp2(e) * (1 + torch.rand(shape, generator=g, device=device))


def prepare_inputs(p: BlockwiseGemmProblem, specs, seed: int, device: str) -> dict[str, Any]:
    import torch

    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return {
        "a": draw_operand((p.l, p.m, p.k), p.dtype, p.init, g, device),
        "b": draw_operand((p.l, p.n, p.k), p.dtype, p.init, g, device),
        "c": specs["c"].allocate(generator=g, device=device),
        "sfa": draw_scales(specs["sfa"].shape, g, device),
        "sfb": draw_scales(specs["sfb"].shape, g, device),
    }


def scale_a(a, sfa_storage, k: int):
    """A (L, M, K) fp8 -> float32 times SFA stored (L, KB, M)."""
    import torch

    s = sfa_storage.permute(0, 2, 1)  # (L, M, KB)
    return a.to(torch.float32) * torch.repeat_interleave(s, GRANULARITY, dim=-1)[..., :k]


def scale_b(b, sfb_storage, n: int, k: int):
    """B (L, N, K) fp8 -> float32 times SFB stored (L, NB, KB)."""
    import torch

    s = torch.repeat_interleave(sfb_storage, GRANULARITY, dim=-1)[..., :k]
    s = torch.repeat_interleave(s, GRANULARITY, dim=-2)[..., :n, :]
    return b.to(torch.float32) * s


def matmul_f32(a, b_t):
    import torch

    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return torch.matmul(a, b_t)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev


def reference(p: BlockwiseGemmProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """``C = A_f @ B_f^T`` in float32 (TF32 off), (L, M, N)."""
    a = scale_a(inputs["a"], inputs["sfa"], p.k)
    b = scale_b(inputs["b"], inputs["sfb"], p.n, p.k)
    return {"c": matmul_f32(a, b.transpose(-1, -2))}


def flops_bytes(p: BlockwiseGemmProblem) -> tuple[float, float]:
    """2*M*N*K*L; A, B and the scales read once, C written once."""
    nbytes = sum(s.nbytes() for s in tensor_specs(p).values())
    return 2.0 * p.m * p.n * p.k * p.l, float(nbytes)


# -- the contiguous grouped variant -----------------------------------------------------------
#: rows of one group are a multiple of this (upstream ``create_mask(..., m_aligned=128)``,
#: contiguous_grouped_gemm.py L2630; module docstring L68: "each ValidM will be aligned to 128")
GROUP_ALIGN_M = 128


@dataclass(frozen=True)
class GroupedBlockwiseGemmProblem(BlockwiseGemmProblem):
    """The contiguous grouped blockwise GEMM: A (M, K) and C (M, N) hold the groups' rows one
    after the other, B (N, K, groups) one matrix per group; group ``g`` computes
    ``C[rows of g] = A_f[rows of g] @ B_f[:, :, g]^T``.

    Args:
        groups: number of groups (B's L); derived from ``group_sizes`` when that is given.
        group_sizes: rows of each group, each a multiple of 128 (zero allowed), summing to
            ``m``; None: drawn from (m, groups, group_seed) by
            :func:`~cute_gemm.blackwell_common.draw_group_sizes`.
        group_seed: the seed of that draw.

    ``l`` is A's and C's batch and must stay 1 (the groups are B's L, as upstream flattens
    them into M).

    Upstream's example instead draws each group independently, ``128 * randint(int(0.7 e) //
    128, int(1.3 e) // 128)`` around an expected size ``e`` (``create_mask``,
    contiguous_grouped_gemm.py L2630-L2654, Python's unseeded ``random``), so its total M is
    itself random; here the total is the problem's.
    """

    m: int = 256
    groups: int | None = None
    group_sizes: tuple[int, ...] | None = None
    group_seed: int = 0

    def validate(self) -> None:
        super().validate()
        if self.l != 1:
            raise ShapeError(
                f"--l {self.l}: the grouped GEMM's A and C have L=1; the groups are --groups"
            )
        resolve_group_sizes(self, "m", GROUP_ALIGN_M, "rows")


def grouped_tensor_specs(p: GroupedBlockwiseGemmProblem) -> dict[str, TensorSpec]:
    """Upstream's ``create_tensors`` (L2657-L2720) and argument order a, b, c, sfa, sfb,
    gidx_mapping: A (M, K, 1), B (N, K, groups), C (M, N, 1), SFA (M, KB, 1) M-major, SFB
    (NB, KB, groups) K-major, all dynamic and 16-byte aligned; ``gidx`` (M,) int32, the group
    of each row (``from_dlpack(...).mark_layout_dynamic()``, element-aligned)."""
    g = p.groups
    return {
        "a": operand(p.m, p.k, 1, p.dtype, init="zeros"),
        "b": operand(p.n, p.k, g, p.dtype, init="zeros"),
        "c": operand(p.m, p.n, 1, p.c_dtype, role="output", init="empty"),
        "sfa": sfa_spec(p.m, p.k, 1),
        "sfb": sfb_spec(p.n, p.k, g),
        "gidx": TensorSpec((p.m,), "int32", leading_dim=0, align=4, init="zeros"),
    }


def grouped_prepare_inputs(
    p: GroupedBlockwiseGemmProblem, specs, seed: int, device: str
) -> dict[str, Any]:
    """As :func:`prepare_inputs`; ``gidx`` from the problem's group sizes (upstream's
    ``gidx_mapping``, ``create_mask`` L2650)."""
    import torch

    g = torch.Generator(device=device)
    g.manual_seed(seed)
    gidx = torch.repeat_interleave(
        torch.arange(p.groups, dtype=torch.int32),
        torch.tensor(p.group_sizes, dtype=torch.int64),
    )
    return {
        "a": draw_operand((1, p.m, p.k), p.dtype, p.init, g, device),
        "b": draw_operand((p.groups, p.n, p.k), p.dtype, p.init, g, device),
        "c": specs["c"].allocate(generator=g, device=device),
        "sfa": draw_scales(specs["sfa"].shape, g, device),
        "sfb": draw_scales(specs["sfb"].shape, g, device),
        "gidx": gidx.to(device),
    }


def grouped_reference(p: GroupedBlockwiseGemmProblem, inputs: Mapping[str, Any]) -> dict:
    """Per group, ``C[rows] = A_f[rows] @ B_f[g]^T`` in float32 (upstream's reference,
    L2864-L2899, with the group sizes from the problem); (1, M, N). The rows of a group come
    from ``group_sizes``, not from ``gidx``, so a wrong ``gidx`` fails the check."""
    import torch

    a = scale_a(inputs["a"], inputs["sfa"], p.k)[0]
    b = scale_b(inputs["b"], inputs["sfb"], p.n, p.k)
    c = torch.zeros((1, p.m, p.n), dtype=torch.float32, device=a.device)
    start = 0
    for g, rows in enumerate(p.group_sizes):
        if rows:
            c[0, start : start + rows] = matmul_f32(a[start : start + rows], b[g].T)
        start += rows
    return {"c": c}


def grouped_flops_bytes(p: GroupedBlockwiseGemmProblem) -> tuple[float, float]:
    """2*M*N*K (each row belongs to one group); A, C, SFA and ``gidx`` once, B and SFB of the
    groups that have rows once (an empty group's B is never read)."""
    specs = grouped_tensor_specs(p)
    used = sum(1 for s in p.group_sizes if s) / p.groups
    nbytes = sum(s.nbytes() * (used if n in ("b", "sfb") else 1) for n, s in specs.items())
    return 2.0 * p.m * p.n * p.k, float(nbytes)
