"""Block-scaled GEMM: the problem, the element and scale-factor formats, the scale factors'
layout in memory, and the dequantising reference; shared by this package's implementations.

The operator is the GEMM workload's (:data:`kernelplan.workloads.gemm.GEMM`,
``C[m, n, l] = sum_k A[m, k, l] B[n, k, l]``, TN) on dequantised operands::

    A_f[m, k, l] = decode(A[m, k, l]) * decode(SFA[m, k // sf_vec_size, l])
    B_f[n, k, l] = decode(B[n, k, l]) * decode(SFB[n, k // sf_vec_size, l])
    C = A_f @ B_f^T, accumulated in fp32, stored in c_dtype

so the problem is :class:`BlockScaledGemmProblem`, the workload's problem with the scaling mode
added (``KernelPlan.problem_type``), not a workload of its own.

Formats, and where each definition is taken from:

- FP4 E2M1 (``float4_e2m1fn``), FP8 E8M0 (the MX scale ``float8_e8m0fnu``): the OCP
  Microscaling Formats (MX) Specification v1.0, section 5.3.3 (E2M1: 1 sign, 2 exponent bits
  with bias 1, 1 mantissa bit, no inf/NaN: magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6) and section
  5.4.1 (E8M0: the scale is 2^(bits - 127); 0xFF is NaN). MXF8/MXF4 use a block of 32 with an
  E8M0 scale (section 5, table 1).
- NVFP4 (E2M1 elements, a block of 16, an FP8 E4M3 scale): NVIDIA's format, which the OCP
  specification does not define; taken from the example itself: the kernel class's
  docstring (``dense_blockscaled_gemm_persistent.py`` L137-L142: MXF8 / MXF4 / NVF4 pairs of
  element type, scale type and ``sf_vec_size``) and its emulated reference
  ``reference_scaled_mm_emulated`` (L2412-L2439: every element times its block's scale,
  ``repeat_interleave(sf, sf_vec_size)[:, :k]``, then an fp32 einsum).
- FP8 E4M3 / E5M2 elements and the E4M3 scale: the OCP 8-bit Floating Point Specification
  (OFP8) v1.0, as ``torch.float8_e4m3fn`` / ``torch.float8_e5m2`` implement it (decoded here by
  torch's own conversion to float32).
- Packing of FP4: two elements per byte, the element of even K in the low nibble, as
  ``torch.float4_e2m1fn_x2`` stores them; upstream allocates FP4 A/B as int8 of K/2 and views
  them as that type for its reference (L2624-L2628, L2677-L2679), so the packing the kernel
  reads is torch's.

Scale-factor layout in memory (what the kernel's ``tile_atom_to_shape_SF`` layout addresses;
upstream builds it in ``create_and_reorder_scale_factor_tensor``, L2270-L2312, and
``cvt_sf_MKL_to_M32x4xrm_K4xrk_L``, L2238-L2262): the logical scale factors SF[mn, kb, l]
(kb = k // sf_vec_size) padded to mn a multiple of 128 and kb a multiple of 4, stored
contiguous as ``(L, MN/128, KB/4, 32, 4, 4)``, where row ``mn = 128*i + 32*j + r`` sits at
``[.., i, .., r, j, ..]`` and ``kb = 4*q + s`` at ``[.., q, .., s]``. :func:`to_blocked` and
:func:`from_blocked` convert; the reference reads the stored (blocked) bytes back through
:func:`from_blocked`, so a wrong layout assumption here would fail the check on a GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kernelplan import ShapeError, TensorSpec
from kernelplan.workloads.gemm import GemmProblem

#: A/B element types (torch-like spelling; FP4 is stored packed in uint8).
AB_DTYPES = ("float4_e2m1fn", "float8_e4m3fn", "float8_e5m2")
#: Scale-factor types.
SF_DTYPES = ("float8_e8m0fnu", "float8_e4m3fn")
#: Output types (upstream's ``is_valid_dtypes_and_scale_factor_vec_size``, L1958-L1966).
C_DTYPES = ("float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")
#: The block sizes the formats define (NVFP4: 16; MX: 32).
SF_VEC_SIZES = (16, 32)
#: DSL spelling of each type.
CUTE = {
    "float4_e2m1fn": "Float4E2M1FN",
    "float8_e4m3fn": "Float8E4M3FN",
    "float8_e5m2": "Float8E5M2",
    "float8_e8m0fnu": "Float8E8M0FNU",
    "float32": "Float32",
    "float16": "Float16",
    "bfloat16": "BFloat16",
}
#: E2M1 magnitudes by the 3 low bits of a code (OCP MX v1.0, 5.3.3).
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def bits(dtype: str) -> int:
    return (
        4
        if dtype == "float4_e2m1fn"
        else 8
        if dtype.startswith("float8")
        else 16
        if (dtype in ("float16", "bfloat16"))
        else 32
    )


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class BlockScaledGemmProblem(GemmProblem):
    """The GEMM problem with a block scaling mode: ``dtype`` is A's and B's element type
    (one type for both here; upstream also mixes them), ``c_dtype`` the output's.

    Args:
        sf_dtype: the scale factors' type: float8_e8m0fnu (MX) or float8_e4m3fn (NVFP4).
        sf_vec_size: K elements that share one scale factor (16: NVFP4; 32: MX).
    """

    dtype: str = "float4_e2m1fn"
    c_dtype: str | None = "float16"
    init: Literal["randn", "randint"] = "randint"
    sf_dtype: str = "float8_e4m3fn"
    sf_vec_size: int = 16

    def validate(self) -> None:
        for key in ("m", "n", "k", "l"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ShapeError(f"--{key} must be a positive integer (got {v})")
        if self.c_dtype is None:
            object.__setattr__(self, "c_dtype", "float16")
        for key, allowed in (("dtype", AB_DTYPES), ("c_dtype", C_DTYPES), ("sf_dtype", SF_DTYPES)):
            if getattr(self, key) not in allowed:
                raise ShapeError(f"--{key} {getattr(self, key)}: one of {', '.join(allowed)}")
        if self.sf_vec_size not in SF_VEC_SIZES:
            raise ShapeError(
                f"--sf_vec_size {self.sf_vec_size}: the block formats define 16 (NVFP4) and 32 "
                "(MX) only"
            )
        if self.dtype == "float4_e2m1fn" and self.k % 2:
            raise ShapeError(f"--k {self.k}: FP4 A/B are packed two per byte along K: K even")

    @property
    def sf_k(self) -> int:
        return ceil_div(self.k, self.sf_vec_size)


def sf_storage_shape(p: BlockScaledGemmProblem, mn: int) -> tuple[int, ...]:
    """The blocked storage of one operand's scale factors, (L, MN/128, SFK/4, 32, 4, 4)."""
    return (p.l, ceil_div(mn, 128), ceil_div(p.sf_k, 4), 32, 4, 4)


def tensor_specs(p: BlockScaledGemmProblem) -> dict[str, TensorSpec]:
    """A (L, M, K) and B (L, N, K) K-major (FP4: uint8 of K/2 bytes a row), the blocked scale
    factors as bytes, C (L, M, N) N-major; all filled by :func:`prepare_inputs`. The views are
    dynamic (``leading_dim``), so the signature does not carry M, N, K, L."""
    kb = p.k // 2 if p.dtype == "float4_e2m1fn" else p.k
    ab = "uint8" if p.dtype == "float4_e2m1fn" else p.dtype

    def op(shape, dtype, **kw):
        return TensorSpec(shape, dtype, perm=(1, 2, 0), leading_dim=1, init="zeros", **kw)

    return {
        "a": op((p.l, p.m, kb), ab),
        "b": op((p.l, p.n, kb), ab),
        "sfa": TensorSpec(sf_storage_shape(p, p.m), "uint8", init="zeros", align=32, leading_dim=5),
        "sfb": TensorSpec(sf_storage_shape(p, p.n), "uint8", init="zeros", align=32, leading_dim=5),
        "c": op((p.l, p.m, p.n), p.c_dtype, role="output"),
    }


# -- formats ------------------------------------------------------------------------------
def decode_e2m1(packed, k: int):
    """Packed FP4 E2M1 (uint8, two per byte along the last dim, even K in the low nibble) ->
    float32 with last dim ``k``."""
    import torch

    lo = (packed & 0x0F).to(torch.int64)
    hi = (packed >> 4).to(torch.int64)
    codes = torch.stack((lo, hi), dim=-1).flatten(-2)[..., :k]
    table = torch.tensor(E2M1_VALUES, dtype=torch.float32, device=packed.device)
    mag = table[codes & 0x7]
    return torch.where((codes & 0x8) != 0, -mag, mag)


def encode_e2m1(codes):
    """4-bit codes (int64, last dim even) -> packed bytes (even index in the low nibble)."""
    import torch

    pairs = codes.reshape(*codes.shape[:-1], -1, 2)
    return (pairs[..., 0] | (pairs[..., 1] << 4)).to(torch.uint8)


def decode_sf(raw, sf_dtype: str):
    """Scale-factor bytes -> float32: E8M0 is 2^(bits-127), 0xFF NaN (OCP MX v1.0, 5.4.1);
    E4M3 through torch's float8_e4m3fn."""
    import torch

    if sf_dtype == "float8_e8m0fnu":
        x = torch.exp2(raw.to(torch.float32) - 127.0)
        return torch.where(raw == 0xFF, torch.full_like(x, float("nan")), x)
    return raw.view(torch.float8_e4m3fn).to(torch.float32)


def decode_ab(raw, dtype: str, k: int):
    import torch

    if dtype == "float4_e2m1fn":
        return decode_e2m1(raw, k)
    return raw.view(getattr(torch, dtype)).to(torch.float32)


def to_blocked(sf, p: BlockScaledGemmProblem, mn: int):
    """Logical scale factors (L, MN, SFK) -> the blocked storage (see the module docstring);
    padding is zero bytes."""
    import torch

    l, rm, rk = p.l, ceil_div(mn, 128), ceil_div(p.sf_k, 4)
    pad = torch.zeros((l, rm * 128, rk * 4), dtype=sf.dtype, device=sf.device)
    pad[:, :mn, : p.sf_k] = sf
    # mn = 128*i + 32*j + r, kb = 4*q + s  ->  [l, i, q, r, j, s]
    v = pad.view(l, rm, 4, 32, rk, 4).permute(0, 1, 4, 3, 2, 5)
    return v.contiguous()


def from_blocked(blocked, p: BlockScaledGemmProblem, mn: int):
    """The inverse of :func:`to_blocked`: (L, MN, SFK) from the stored bytes."""
    l, rm, rk = p.l, ceil_div(mn, 128), ceil_div(p.sf_k, 4)
    v = blocked.view(l, rm, rk, 32, 4, 4).permute(0, 1, 4, 3, 2, 5)
    return v.reshape(l, rm * 128, rk * 4)[:, :mn, : p.sf_k]


# -- inputs and reference -----------------------------------------------------------------
def draw_sf(p: BlockScaledGemmProblem, shape, generator, device):
    """Scale factors 2^e with e in [-2, 2] (exact in both scale types), as raw bytes."""
    import torch

    e = torch.randint(-2, 3, shape, generator=generator, device=device)
    if p.sf_dtype == "float8_e8m0fnu":
        return (e + 127).to(torch.uint8)
    return torch.exp2(e.float()).to(torch.float8_e4m3fn).view(torch.uint8)


def prepare_inputs(p: BlockScaledGemmProblem, specs, seed: int, device: str) -> dict[str, Any]:
    """A/B: every FP4 code (all 16, -0 included) or integers in [-2, 2] for FP8
    (``init="randint"``) or N(0,1) rounded to FP8 (``randn``); scale factors 2^[-2, 2]; C
    zeroed (the check poisons it)."""
    import torch

    g = torch.Generator(device=device)
    g.manual_seed(seed)
    out: dict[str, Any] = {}
    for name, rows in (("a", p.m), ("b", p.n)):
        if p.dtype == "float4_e2m1fn":
            codes = torch.randint(0, 16, (p.l, rows, p.k), generator=g, device=device)
            out[name] = encode_e2m1(codes)
        elif p.init == "randint":
            x = torch.randint(-2, 3, (p.l, rows, p.k), generator=g, device=device).float()
            out[name] = x.to(getattr(torch, p.dtype))
        else:
            x = torch.randn((p.l, rows, p.k), generator=g, device=device)
            out[name] = x.to(getattr(torch, p.dtype))
        sf = draw_sf(p, (p.l, rows, p.sf_k), g, device)
        out["sf" + name] = to_blocked(sf, p, rows)
    for name, spec in specs.items():
        if name not in out:
            out[name] = spec.allocate(generator=g, device=device)
    return out


def dequantize(p: BlockScaledGemmProblem, inputs: Mapping[str, Any], name: str, rows: int):
    """One operand in float32 (L, rows, K): elements times their block's scale factor."""
    import torch

    x = decode_ab(inputs[name], p.dtype, p.k).to(torch.float32)
    sf = decode_sf(from_blocked(inputs["sf" + name], p, rows), p.sf_dtype)
    return x * torch.repeat_interleave(sf, p.sf_vec_size, dim=-1)[..., : p.k]


def reference(p: BlockScaledGemmProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """``C = A_f @ B_f^T`` in float32 (TF32 off) from the stored bytes; (L, M, N)."""
    import torch

    a = dequantize(p, inputs, "a", p.m)
    b = dequantize(p, inputs, "b", p.n)
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return {"c": torch.matmul(a, b.transpose(-1, -2))}
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev


def flops_bytes(p: BlockScaledGemmProblem) -> tuple[float, float]:
    """2*M*N*K*L; A, B and their scale factors (blocked, padding included) read once, C
    written once."""
    ab = bits(p.dtype) / 8
    sf = sum(_prod(sf_storage_shape(p, mn)) for mn in (p.m, p.n))
    nbytes = (p.m + p.n) * p.k * p.l * ab + sf + p.m * p.n * p.l * bits(p.c_dtype) / 8
    return 2.0 * p.m * p.n * p.k * p.l, float(nbytes)


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= x
    return n
