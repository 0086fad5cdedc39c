"""Mixed-input GEMM: the problem, A's storage (int4 packed, optionally shuffled) and scales,
and the dequantising reference; shared by this package's implementations.

The operator is the GEMM workload's (TN, ``C[m, n, l] = sum_k A[m, k, l] B[n, k, l]``) with A
narrower than B and converted to B's type on the way to the MMA (upstream's module docstring,
``mixed_input_gemm.py`` L58-L78)::

    int8 / uint8 A (convert-only):  C = convert(A) @ B^T
    int4 A (convert-scale):         C = (convert(A) * S[m, k // g, l]) @ B^T

with ``g = scale_granularity_k`` K elements of one row sharing a scale in B's type. So the
problem is :class:`MixedInputGemmProblem`, the workload's problem with A's type and the scale
granularity added (``KernelPlan.problem_type``).

Where the format is taken from: the example's own reference code,
``mixed_input_host_utils.py`` ``run_batched_mixed_input_ref_and_compare`` (L465-L506: A in
fp32 reshaped to (M, K/g, g, L) times the scale reshaped to (M, K/g, 1, L), then an fp32
einsum) and ``create_i4_tensor_and_scale`` (L75-L177: int4 values in [-8, 7], the scale
tensor (M, K/g, L) M-major, in B's type). Storage of int4: two's complement nibbles, the
element of even K in the low nibble of its byte (CuTe's sub-byte order; upstream writes the
bytes with ``cute.testing.convert`` through ``cutlass.torch.cute_tensor_like``, the DSL's
``cutlass/torch.py``). Upstream allocates one byte per int4 element (``torch.empty_like``
of the (M, K, L) data as uint8) and the kernel addresses only the first half; the storage
here is the same (L, M, K) uint8 buffer, so the kernel sees the same view, and the bytes
counted are the K/2 a row the kernel reads.

Shuffle: for a K-major int4 A with bf16 B and ``g >= 8`` (``mixed_input_helpers.is_shuffle_a``,
CUDA 13.1 and later) the kernel expects each group of 8 K elements stored in the order
0, 2, 1, 3, 4, 6, 5, 7 (``create_i4_tensor_and_scale`` L134-L144): the inputs are stored so
and the reference undoes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from cute_gemm.blackwell_common import resolve_group_sizes

from kernelplan import ShapeError, TensorSpec
from kernelplan.workloads.gemm import GemmProblem

A_DTYPES = ("int4", "int8", "uint8")
B_DTYPES = ("bfloat16", "float16")
C_DTYPES = ("bfloat16", "float16", "float32")
#: the order of 8 K elements in a shuffled group (upstream L131)
SHUFFLE = (0, 2, 1, 3, 4, 6, 5, 7)
CUTE = {
    "int4": "Int4",
    "int8": "Int8",
    "uint8": "Uint8",
    "bfloat16": "BFloat16",
    "float16": "Float16",
    "float32": "Float32",
}


def divisibility(extent: int, upper: int = 128) -> int:
    """The largest power of 2 dividing ``extent``, at most ``upper``
    (``mixed_input_helpers.get_divisibility``): upstream's assumed alignment."""
    d = 1
    while d < upper and extent % (2 * d) == 0:
        d *= 2
    return d


@dataclass(frozen=True)
class MixedInputGemmProblem(GemmProblem):
    """The GEMM problem with a narrow A: ``dtype`` is B's type (and the MMA's), ``c_dtype``
    C's.

    Args:
        a_dtype: int4 (with scales), int8 or uint8 (convert only).
        scale_granularity_k: K elements sharing one scale (int4 only; 0 for int8/uint8).
    """

    m: int = 128
    n: int = 128
    k: int = 128
    dtype: str = "bfloat16"
    c_dtype: str | None = "bfloat16"
    init: Literal["randn", "randint"] = "randint"
    a_dtype: str = "int4"
    scale_granularity_k: int = 128

    def validate(self) -> None:
        super().validate()
        if self.dtype not in B_DTYPES:
            raise ShapeError(f"--dtype {self.dtype} (B and the MMA): one of {', '.join(B_DTYPES)}")
        if self.c_dtype not in C_DTYPES:
            raise ShapeError(f"--c_dtype {self.c_dtype}: one of {', '.join(C_DTYPES)}")
        if self.a_dtype not in A_DTYPES:
            raise ShapeError(f"--a_dtype {self.a_dtype}: one of {', '.join(A_DTYPES)}")
        g = self.scale_granularity_k
        if self.a_dtype == "int4":
            if self.k % 2:
                raise ShapeError(
                    f"--k {self.k}: an int4 A is packed two elements a byte along K: K even"
                )
            if g <= 0 or self.k % g:
                raise ShapeError(
                    f"--scale_granularity_k {g}: int4 A needs a scale group dividing K={self.k}"
                )
        elif g != 0:
            raise ShapeError(f"--scale_granularity_k {g}: {self.a_dtype} A takes no scales (0)")

    @property
    def scaled(self) -> bool:
        return self.a_dtype == "int4"

    @property
    def num_scales(self) -> int:
        return self.k // self.scale_granularity_k if self.scaled else 0


def shuffled(p: MixedInputGemmProblem) -> bool:
    """Whether the kernel takes A shuffled (upstream ``is_shuffle_a``, which also needs CUDA
    13.1+ in the DSL: asked of the DSL itself)."""
    if not (p.scaled and p.k % 8 == 0 and p.dtype == "bfloat16" and p.scale_granularity_k >= 8):
        return False
    import cutlass

    return bool(cutlass.target_version(min_version="13.1"))


def tensor_specs(p: MixedInputGemmProblem) -> dict[str, TensorSpec]:
    """A (L, M, K) K-major (int4: Int4 elements over a uint8 buffer, upstream's allocation),
    the scales (L, K/g, M) seen as (M, K/g, L) M-major, B (L, N, K) K-major, C (L, M, N);
    dynamic layouts with upstream's assumed alignments (``get_divisibility`` of the
    contiguous extent), C's contiguous extent marked divisible likewise."""
    a = TensorSpec(
        (p.l, p.m, p.k),
        "uint8" if p.scaled else p.a_dtype,
        perm=(1, 2, 0),
        leading_dim=1,
        init="zeros",
        align=divisibility(p.k),
        element="Int4" if p.scaled else None,
    )
    specs = {"a": a}
    if p.scaled:
        specs["a_scale"] = TensorSpec(
            (p.l, p.num_scales, p.m),
            p.dtype,
            perm=(2, 1, 0),
            leading_dim=0,
            init="zeros",
            align=divisibility(p.k),
        )
    specs["b"] = TensorSpec(
        (p.l, p.n, p.k),
        p.dtype,
        perm=(1, 2, 0),
        leading_dim=1,
        init="zeros",
        align=divisibility(p.k),
    )
    specs["c"] = TensorSpec(
        (p.l, p.m, p.n),
        p.c_dtype,
        perm=(1, 2, 0),
        leading_dim=1,
        role="output",
        init="empty",
        align=divisibility(p.n),
        divisibility=divisibility(p.n),
    )
    return specs


# -- int4 storage -------------------------------------------------------------------------
def pack_int4(values, shuffle: bool):
    """int values in [-8, 7], (L, M, K) -> (L, M, K/2) bytes (even K in the low nibble), each
    group of 8 along K reordered by :data:`SHUFFLE` first when ``shuffle``."""
    import torch

    if shuffle:
        perm = torch.tensor(SHUFFLE, device=values.device)
        values = values.view(*values.shape[:-1], -1, 8)[..., perm].flatten(-2)
    nib = (values & 0xF).to(torch.uint8)
    pairs = nib.view(*nib.shape[:-1], -1, 2)
    return pairs[..., 0] | (pairs[..., 1] << 4)


def unpack_int4(packed, shuffle: bool):
    """The inverse of :func:`pack_int4`: (L, M, K/2) bytes -> int32 (L, M, K)."""
    import torch

    lo = (packed & 0xF).to(torch.int32)
    hi = (packed >> 4).to(torch.int32)
    v = torch.stack((lo, hi), dim=-1).flatten(-2)
    v = torch.where(v >= 8, v - 16, v)
    if shuffle:
        inv = [SHUFFLE.index(i) for i in range(8)]
        v = v.view(*v.shape[:-1], -1, 8)[..., torch.tensor(inv, device=v.device)].flatten(-2)
    return v


def prepare_inputs(p: MixedInputGemmProblem, specs, seed: int, device: str) -> dict[str, Any]:
    """A: int4 in [-8, 7] (int8 [-8, 7], uint8 [0, 15]); scales integers in [-3, 2] as
    upstream draws them (``random_(-3, 3)``, L131); B integers in [-2, 2] (``randint``) or
    N(0, 1); C zeroed (the check poisons it)."""
    import torch

    g = torch.Generator(device=device)
    g.manual_seed(seed)
    out: dict[str, Any] = {}
    lo = 0 if p.a_dtype == "uint8" else -8
    vals = torch.randint(lo, lo + 16, (p.l, p.m, p.k), generator=g, device=device)
    if p.scaled:
        packed = pack_int4(vals, shuffled(p)).reshape(-1)
        buf = torch.zeros((p.l, p.m, p.k), dtype=torch.uint8, device=device)
        buf.view(-1)[: packed.numel()] = packed
        out["a"] = buf
        s = torch.randint(-3, 3, (p.l, p.num_scales, p.m), generator=g, device=device)
        out["a_scale"] = s.to(getattr(torch, p.dtype))
    else:
        out["a"] = vals.to(getattr(torch, p.a_dtype))
    if p.init == "randint":
        b = torch.randint(-2, 3, (p.l, p.n, p.k), generator=g, device=device).float()
    else:
        b = torch.randn((p.l, p.n, p.k), generator=g, device=device)
    out["b"] = b.to(getattr(torch, p.dtype))
    out["c"] = specs["c"].allocate(generator=g, device=device)
    return out


def dequantize_a(p: MixedInputGemmProblem, inputs: Mapping[str, Any]):
    """A in float32 (L, M, K) from the stored bytes: unpacked (and unshuffled) int4 times its
    group's scale, or the int8/uint8 values as they are."""
    import torch

    if not p.scaled:
        return inputs["a"].to(torch.float32)
    half = p.l * p.m * p.k // 2
    packed = inputs["a"].reshape(-1)[:half].view(p.l, p.m, p.k // 2)
    a = unpack_int4(packed, shuffled(p)).to(torch.float32)
    s = inputs["a_scale"].to(torch.float32).permute(0, 2, 1)  # (L, M, K/g)
    return a * torch.repeat_interleave(s, p.scale_granularity_k, dim=-1)


def reference(p: MixedInputGemmProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """``C = A_f @ B^T`` in float32 (TF32 off), (L, M, N)."""
    import torch

    a = dequantize_a(p, inputs)
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return {"c": torch.matmul(a, inputs["b"].to(torch.float32).transpose(-1, -2))}
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev


def flops_bytes(p: MixedInputGemmProblem) -> tuple[float, float]:
    """2*M*N*K*L (the scaling is M*K*L more multiplies, not counted); A (K/2 bytes a row for
    int4), its scales, B read once, C written once."""
    from kernelplan import dtypes

    a = p.m * p.k * p.l * (0.5 if p.scaled else 1.0)
    s = p.m * p.num_scales * p.l * dtypes.nbytes(p.dtype)
    b = p.n * p.k * p.l * dtypes.nbytes(p.dtype)
    c = p.m * p.n * p.l * dtypes.nbytes(p.c_dtype)
    return 2.0 * p.m * p.n * p.k * p.l, float(a + s + b + c)


# -- the contiguous grouped variant (groups along N) ---------------------------------------------
@dataclass(frozen=True)
class GroupedMixedInputGemmProblem(MixedInputGemmProblem):
    """The contiguous grouped mixed-input GEMM: A (M, K, groups) narrow (int4 with its scales
    (M, K/g, groups), or int8/uint8), B (N, K) and C (M, N) hold the groups' columns one after
    the other; group ``j`` computes ``C[:, cols of j] = A_f[:, :, j] @ B[cols of j]^T``.

    Args:
        groups: number of groups (A's L); derived from ``group_sizes`` when that is given.
        group_sizes: columns (N) of each group, each a multiple of 16 bytes of B's type (8
            bf16/fp16 columns; zero allowed), summing to ``n``; None: drawn from (n, groups,
            group_seed) by :func:`~cute_gemm.blackwell_common.draw_group_sizes` (upstream's
            multinomial draw, ``create_cumsum_tensor``, from torch's global generator seeded
            once per run, ``torch.manual_seed(2025)``, grouped_mixed_input_gemm.py L2301;
            here the seed is the problem's and the draw does not depend on torch).
        group_seed: the seed of that draw.

    ``l`` must stay 1 (upstream fuses the groups into B's and C's N, L=1).
    """

    m: int = 128
    n: int = 128
    k: int = 128
    groups: int | None = None
    group_sizes: tuple[int, ...] | None = None
    group_seed: int = 0

    @property
    def group_align(self) -> int:
        """B's 16 bytes in elements (upstream ``alignment_n = 16 * 8 // b_dtype.width``,
        ``mixed_input_host_utils.py`` L304)."""
        from kernelplan import dtypes

        return int(16 // dtypes.nbytes(self.dtype))

    def validate(self) -> None:
        super().validate()
        if self.l != 1:
            raise ShapeError(
                f"--l {self.l}: the grouped GEMM's B and C have L=1; the groups are --groups"
            )
        derived = frozenset(f for f in ("groups", "group_sizes") if getattr(self, f) is None)
        note = f"16 bytes of {self.dtype}"
        resolve_group_sizes(self, "n", self.group_align, "columns", note)
        object.__setattr__(self, "_derived", derived)

    def replace(self, **changes: Any):
        """A copy with ``changes``; ``groups`` and ``group_sizes``, where validation derived
        them (a drawn vector, a count from a stated vector), are derived again unless given:
        ``replace(n=512, groups=4)`` on one drawn group draws four over 512 columns."""
        derived = {f: None for f in getattr(self, "_derived", ())}
        return super().replace(**{**derived, **changes})

    def a_problem(self) -> MixedInputGemmProblem:
        """A and its scales as the batched problem's with L = groups (what
        :func:`tensor_specs` and :func:`dequantize_a` read)."""
        return MixedInputGemmProblem(
            m=self.m,
            n=self.n,
            k=self.k,
            l=self.groups,
            dtype=self.dtype,
            c_dtype=self.c_dtype,
            init=self.init,
            a_dtype=self.a_dtype,
            scale_granularity_k=self.scale_granularity_k,
        )


def grouped_tensor_specs(p: GroupedMixedInputGemmProblem) -> dict[str, TensorSpec]:
    """Upstream's argument order a, a_scale, b, cumsum, c (``__call__`` L423-L432): A and its
    scales as :func:`tensor_specs` gives them with L = groups; B (N, K, 1) and C (M, N, 1) as
    there with L = 1; ``cumsum`` (groups + 1,) int32 with a static layout
    (``create_cumsum_tensor``: ``cute_tensor_like(..., is_dynamic_layout=False)``), so the
    group count is compiled in (as it is in the kernel's ``group_count``)."""
    a = tensor_specs(p.a_problem())
    bc = tensor_specs(p.a_problem().replace(l=1))
    specs = {"a": a["a"]}
    if p.scaled:
        specs["a_scale"] = a["a_scale"]
    specs["b"] = bc["b"]
    specs["cumsum"] = TensorSpec((p.groups + 1,), "int32", init="zeros", align=4)
    specs["c"] = bc["c"]
    return specs


def grouped_prepare_inputs(
    p: GroupedMixedInputGemmProblem, specs, seed: int, device: str
) -> dict[str, Any]:
    """As :func:`prepare_inputs` for A (L = groups) and B, C (L = 1); ``cumsum`` from the
    problem's group sizes (0, N0, N0+N1, ...)."""
    import torch

    q = p.a_problem()
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    out: dict[str, Any] = {}
    lo = 0 if p.a_dtype == "uint8" else -8
    vals = torch.randint(lo, lo + 16, (q.l, q.m, q.k), generator=g, device=device)
    if p.scaled:
        packed = pack_int4(vals, shuffled(q)).reshape(-1)
        buf = torch.zeros((q.l, q.m, q.k), dtype=torch.uint8, device=device)
        buf.view(-1)[: packed.numel()] = packed
        out["a"] = buf
        s = torch.randint(-3, 3, (q.l, q.num_scales, q.m), generator=g, device=device)
        out["a_scale"] = s.to(getattr(torch, p.dtype))
    else:
        out["a"] = vals.to(getattr(torch, p.a_dtype))
    if p.init == "randint":
        b = torch.randint(-2, 3, (1, p.n, p.k), generator=g, device=device).float()
    else:
        b = torch.randn((1, p.n, p.k), generator=g, device=device)
    out["b"] = b.to(getattr(torch, p.dtype))
    cum = [0]
    for s_ in p.group_sizes:
        cum.append(cum[-1] + s_)
    out["cumsum"] = torch.tensor(cum, dtype=torch.int32, device=device)
    out["c"] = specs["c"].allocate(generator=g, device=device)
    return out


def grouped_reference(p: GroupedMixedInputGemmProblem, inputs: Mapping[str, Any]) -> dict:
    """Per group, ``C[:, cols] = A_f[group] @ B[cols]^T`` in float32 (upstream
    ``run_contiguous_grouped_ref_and_compare``, ``mixed_input_host_utils.py`` L402-L462, with
    the sizes from the problem, not from ``cumsum``); (1, M, N)."""
    import torch

    a = dequantize_a(p.a_problem(), inputs)  # (groups, M, K)
    b = inputs["b"][0].to(torch.float32)
    c = torch.zeros((1, p.m, p.n), dtype=torch.float32, device=a.device)
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        start = 0
        for j, cols in enumerate(p.group_sizes):
            if cols:
                c[0, :, start : start + cols] = a[j] @ b[start : start + cols].T
            start += cols
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    return {"c": c}


def grouped_flops_bytes(p: GroupedMixedInputGemmProblem) -> tuple[float, float]:
    """2*M*N*K (each column belongs to one group); A and its scales of the groups that have
    columns, B, C and ``cumsum`` once."""
    from kernelplan import dtypes

    used = sum(1 for s in p.group_sizes if s)
    a = p.m * p.k * used * (0.5 if p.scaled else 1.0)
    s = p.m * p.num_scales * used * dtypes.nbytes(p.dtype)
    b = p.n * p.k * dtypes.nbytes(p.dtype)
    c = p.m * p.n * dtypes.nbytes(p.c_dtype)
    return 2.0 * p.m * p.n * p.k, float(a + s + b + c + 4 * (p.groups + 1))
