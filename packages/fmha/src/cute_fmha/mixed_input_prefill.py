"""What the two CUTLASS Blackwell mixed-input FMHA prefill adapters share (d256 and d512).

Upstream (under ``examples/python/CuTeDSL``):
``cute/blackwell/kernel/attention/mixed_input_fmha/mixed_input_fmha_prefill_d256.py`` (class
``MixedInputFusedMultiHeadAttentionPrefillD256``) and ``..._prefill_d512.py`` (``...D512``),
one interface: ``__init__(scale_granularity, qk_acc_dtype, pv_acc_dtype, is_persistent,
mask_type)`` (d256 L57-L64) and ``__call__(q_iter, k_iter, v_iter, o_iter, scale_k_iter,
scale_v_iter, problem_shape, scale_softmax_log2, scale_output, window_size_left,
window_size_right, stream)`` (d256 L133-L147): bf16 Q and O, an int8 K/V cache with one bf16
scale per ``scale_granularity`` elements of each K/V row, dequantised on the way to the MMA.

The problem: the workload's (:class:`MixedInputAttentionProblem`, an implementation problem
type, not a new workload) with two fields the examples need: ``kv_dtype`` (int8, int4 or fp8
e4m3: the prefill examples take int8 only, ``run()`` d256 L1636; the decode example takes all
three: its ``can_implement`` asks for e4m3 as ``Float8E4M3FN``, ``mixed_input_fmha_decode.py``
L141-L142, and its convert warps sign-extend int4, L1150-L1158) and ``scale_granularity``
(elements of d per scale). The same type carries the decode setting (``sq = 1``, see
:mod:`cute_fmha.mixed_input_fmha_decode`). What the
attention computes is the workload's, over the DEQUANTISED K and V (``k_int8 * scale``, as
upstream's reference ``run_torch_fmha`` does, d256 L1753-L1790): :meth:`MixedInputPrefill.
prepare_inputs` draws the workload's inputs for the seed and quantises its K and V per block
(scale = max|block| / 127, rounded to bf16; values rounded and clamped to [-127, 127]); the
reference dequantises them in fp32 and runs the workload's reference.

Tensors (upstream's layouts, d256 L153-L199): Q and O stored (b, h_q, s, d) and K, V (b, h_kv,
s, d) (BHSD, not the workload's BSHD: :meth:`prepare_inputs` copies Q into it and the reference
is transposed to O's storage); scales (b, h_kv, s_k, d / scale_granularity). The kernel takes
raw pointers (``.iterator``; upstream's tensors are ``from_dlpack(..., assumed_align=128)``)
and builds its own layouts from ``problem_shape = (b, s_q, s_k, h_q, h_k, d)``. No LSE output.

Mask (``run()`` d256 L1708-L1714): ``WINDOW_MASK_INFERENCE`` (bottom-right aligned, as the
workload) with a right window of 0 for causal; not causal and ``s_k`` not a multiple of 128:
``RESIDUAL_MASK``. ``run()`` offers no sliding window: windows are refused here.

Constraints (``run()`` d256 L1624-L1646, d512 L1766-L1788): head dim 256 (d256) or 512 (d512)
for Q/K and V alike; ``scale_granularity`` 128 or 256 (d256), 128, 256 or 512 (d512); bf16 Q
and O; int8 K/V; fp32 accumulators; h_q a multiple of h_kv.

Target sm_100a (tcgen05 2-CTA MMA, TMEM): compiled here for static analysis only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from kernelplan import STREAM, Config, CuteKernel, KernelPlan, ShapeError, Target, TensorSpec
from kernelplan.cutlass_src import load_example
from kernelplan.workloads.attention import ATTENTION_FWD, AttentionProblem

from .fmha_common import LOG2_E

#: K/V element types a mixed-input implementation may take (the prefill examples: int8 only;
#: the decode example: int8, int4 and fp8 e4m3). int4 is stored packed, two a byte.
KV_DTYPES = ("int8", "int4", "float8_e4m3fn")
#: the largest |value| of a quantised K/V element (symmetric: int4 uses [-7, 7]; e4m3's
#: largest finite value is 448)
QMAX = {"int8": 127, "int4": 7, "float8_e4m3fn": 448}
OPTIONS = "--opt-level 2"  # upstream's (run() d256 L1749)


@dataclass(frozen=True)
class MixedInputAttentionProblem(AttentionProblem):
    """The workload's attention problem with a low-precision K/V cache (see the module
    docstring).

    Args:
        kv_dtype: element type of the quantised K and V.
        scale_granularity: elements of a K/V row that share one bf16 scale (divides d).
    """

    kv_dtype: str = "int8"
    scale_granularity: int = 256

    def validate(self) -> None:
        super().validate()
        if self.kv_dtype not in KV_DTYPES:
            raise ShapeError(f"--kv_dtype {self.kv_dtype}: one of {', '.join(KV_DTYPES)}")
        if self.kv_dtype == "int4" and (self.d_qk % 2 or self.d_v % 2):
            raise ShapeError(
                f"--kv_dtype int4 packs two elements a byte along d: --d_qk {self.d_qk} and "
                f"--d_v {self.d_v} must be even"
            )
        g = self.scale_granularity
        if isinstance(g, bool) or not isinstance(g, int) or g < 1:
            raise ShapeError(f"--scale_granularity must be a positive integer (got {g!r})")
        for key in ("d_qk", "d_v"):
            if getattr(self, key) % g:
                raise ShapeError(
                    f"--scale_granularity {g} does not divide --{key} {getattr(self, key)}"
                )


@dataclass(frozen=True)
class MixedInputPrefillConfig(Config):
    """Upstream's tunable (argparse ``--is_persistent``, default off; accumulators fp32)."""

    is_persistent: bool = False


def quantise(x, granularity: int, kv_dtype: str):
    """(values, scales) of ``x`` (b, s, h, d) in upstream's BHSD storage: per block of
    ``granularity`` elements, scale = max|block| / QMAX rounded to bf16, values x / scale
    rounded (int8, int4: to the nearest integer, clamped to [-QMAX, QMAX]; fp8: to e4m3,
    clamped to +-448 first). int4 values are packed two a byte along d (the even element in
    the low nibble, CuTe's sub-byte order): storage (b, h, s, d / 2) uint8."""
    import torch

    b, s, h, d = x.shape
    xf = x.float().permute(0, 2, 1, 3).reshape(b, h, s, d // granularity, granularity)
    qmax = QMAX[kv_dtype]
    scale = (xf.abs().amax(-1) / qmax).clamp_min(1e-8).to(torch.bfloat16)
    y = (xf / scale.float().unsqueeze(-1)).clamp(-qmax, qmax).reshape(b, h, s, d)
    if kv_dtype == "float8_e4m3fn":
        q = y.to(torch.float8_e4m3fn)
    else:
        q = y.round().to(torch.int8)
        if kv_dtype == "int4":
            q = pack_int4(q)
    return q.contiguous(), scale.contiguous()


def pack_int4(values):
    """int values in [-8, 7], (..., d) -> (..., d / 2) uint8, the even element in the low
    nibble (two's complement nibbles)."""
    import torch

    nib = (values.to(torch.int32) & 0xF).to(torch.uint8)
    return nib[..., 0::2] | (nib[..., 1::2] << 4)


def unpack_int4(packed):
    """The inverse of :func:`pack_int4`: (..., d / 2) uint8 -> int32 (..., d)."""
    import torch

    lo = (packed & 0xF).to(torch.int32)
    hi = (packed >> 4).to(torch.int32)
    v = torch.stack((lo, hi), dim=-1).flatten(-2)
    return torch.where(v >= 8, v - 16, v)


def dequantise(q, scale, granularity: int):
    """fp32 (b, s, h, d) from BHSD values (int8, fp8, or int4 packed in uint8) and their
    block scales."""
    import torch

    vals = unpack_int4(q) if q.dtype == torch.uint8 else q
    b, h, s, d = vals.shape
    x = vals.float().reshape(b, h, s, d // granularity, granularity)
    x = x * scale.float().unsqueeze(-1)
    return x.reshape(b, h, s, d).permute(0, 2, 1, 3)


class MixedInputPrefill(KernelPlan):
    """Base of the d256 and d512 adapters; see the module docstring."""

    package: ClassVar[str] = "fmha"
    workload = ATTENTION_FWD
    problem_type = MixedInputAttentionProblem
    target_sm: ClassVar[tuple[str, ...]] = ("sm_100a",)
    config_type = MixedInputPrefillConfig
    runtime_problem_fields: ClassVar[tuple[str, ...]] = ("softmax_scale",)
    #: upstream class, the one head dim it takes, the scale granularities
    kernel_class: ClassVar[str]
    head_dim: ClassVar[int]
    granularities: ClassVar[tuple[int, ...]]

    def default_problem(self) -> MixedInputAttentionProblem:
        """Upstream's argparse defaults: q_shape = k_shape = (1, 8, 256, d) (b, h, s, d),
        scale granularity d (256 / 512), bf16, not causal."""
        return MixedInputAttentionProblem(
            b=1, sq=256, h_q=8, d_qk=self.head_dim, scale_granularity=self.head_dim
        )

    def supports(self, problem: MixedInputAttentionProblem) -> None:
        p = problem
        if not isinstance(p, MixedInputAttentionProblem):
            raise ShapeError(f"{self.name} takes a mixed-input problem (--kv_dtype, ...)")
        if p.d_qk != self.head_dim or p.d_v != self.head_dim:
            raise ShapeError(
                f"{self.name} takes head dim {self.head_dim} for Q/K and V (got --d_qk "
                f"{p.d_qk}, --d_v {p.d_v})"
            )
        if p.dtype != "bfloat16":
            raise ShapeError(f"{self.name} takes dtype bfloat16 for Q and O (got {p.dtype})")
        if p.kv_dtype != "int8":
            raise ShapeError(f"{self.name} takes --kv_dtype int8 (got {p.kv_dtype})")
        if p.scale_granularity not in self.granularities:
            raise ShapeError(
                f"{self.name} takes --scale_granularity "
                f"{', '.join(map(str, self.granularities))} (got {p.scale_granularity})"
            )
        if p.window_left >= 0 or p.window_right >= 0:
            raise ShapeError(f"{self.name}: upstream offers causal only, no sliding window")

    # -- tensors ------------------------------------------------------------------------------
    def tensor_specs(self, problem: MixedInputAttentionProblem) -> dict[str, TensorSpec]:
        p = problem
        nd = p.d_qk // p.scale_granularity

        def t(shape: tuple[int, ...], dt: str, **kw: Any) -> TensorSpec:
            return TensorSpec(shape, dt, align=128, **kw)  # pointers only (upstream: align 128)

        return {
            "q": t((p.b, p.h_q, p.sq, p.d_qk), p.dtype),
            "k": t((p.b, p.h_kv, p.sk, p.d_qk), p.kv_dtype),
            "v": t((p.b, p.h_kv, p.sk, p.d_v), p.kv_dtype),
            "o": t((p.b, p.h_q, p.sq, p.d_v), p.dtype, role="output", init="empty"),
            "scale_k": t((p.b, p.h_kv, p.sk, nd), "bfloat16"),
            "scale_v": t((p.b, p.h_kv, p.sk, p.d_v // p.scale_granularity), "bfloat16"),
        }

    def prepare_inputs(self, problem: MixedInputAttentionProblem, seed: int, device="cuda"):
        """The workload's inputs for ``seed``, Q and O in BHSD, K and V quantised per block."""
        p = problem
        x = self.workload.prepare_inputs(p, self.workload.tensor_specs(p), seed, device)
        k, sk = quantise(x["k"], p.scale_granularity, p.kv_dtype)
        v, sv = quantise(x["v"], p.scale_granularity, p.kv_dtype)
        q = x["q"].permute(0, 2, 1, 3).contiguous()
        o = x["o"].permute(0, 2, 1, 3).contiguous()
        return {"q": q, "k": k, "v": v, "o": o, "scale_k": sk, "scale_v": sv}

    def _workload_inputs(self, problem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        g = problem.scale_granularity
        return {
            "q": inputs["q"].permute(0, 2, 1, 3),
            "k": dequantise(inputs["k"], inputs["scale_k"], g),
            "v": dequantise(inputs["v"], inputs["scale_v"], g),
        }

    def reference(self, problem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The workload's reference over the dequantised K/V, O in BHSD (no LSE)."""
        ref = self.workload.reference(problem, self._workload_inputs(problem, inputs))
        return {"o": ref["o"].permute(0, 2, 1, 3).contiguous()}

    def reference_lowp(self, problem, inputs: Mapping[str, Any]):
        ref = self.workload.reference_lowp(problem, self._workload_inputs(problem, inputs))
        return {"o": ref["o"].permute(0, 2, 1, 3).contiguous()}

    # -- the kernel ---------------------------------------------------------------------------
    def plan(
        self, problem: MixedInputAttentionProblem, config: MixedInputPrefillConfig, target: Target
    ) -> CuteKernel:
        import cutlass

        p = problem
        mod = load_example(self.source)
        masks = mod.fmha_utils.MaskEnum
        unmasked_tail = not p.causal and p.sk % 128
        mask = masks.RESIDUAL_MASK if unmasked_tail else masks.WINDOW_MASK_INFERENCE
        kernel = getattr(mod, self.kernel_class)(
            p.scale_granularity, cutlass.Float32, cutlass.Float32, config.is_persistent, mask
        )
        size = (p.b, p.sq, p.sk, p.h_q, p.h_kv, p.d_qk)
        scale = p.scale()
        wr = cutlass.Int32(0) if p.causal else None
        return CuteKernel(
            self.name,
            kernel,
            lambda t: (
                *(_ptr(t[n]) for n in ("q", "k", "v", "o", "scale_k", "scale_v")),
                size,
                scale * LOG2_E,
                1.0,  # scale_output = scale_v * inv_scale_o = 1
                None,
                wr,
                STREAM,
            ),  # fmt: skip
            self.tensor_specs(p),
            options=OPTIONS,
            meta={"mask_type": mask.name},
        )


def _ptr(t: Any, align: int = 128) -> Any:
    """A CuTe tensor's pointer (upstream passes ``tensor.iterator``, ``align``-byte aligned:
    128 for the prefill examples, 16 for the decode example). A fake tensor (static analysis)
    has only a dummy iterator: a global pointer of its element type at an aligned dummy
    address stands in (compiled code takes the address at launch). Anything else as is (the
    harness's placeholders when it lists the compile-time values)."""
    from cutlass.cute.runtime import _FakeTensor, make_ptr

    if isinstance(t, _FakeTensor):
        import cutlass.cute as cute

        return make_ptr(t.element_type, 1 << 20, cute.AddressSpace.gmem, assumed_align=align)
    return getattr(t, "iterator", t)
