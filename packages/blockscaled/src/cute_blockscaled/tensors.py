"""The CuTe-tensor entry of the block-scaled siblings (``_prefetch``, ``_amax``): their
``__call__`` takes CuTe tensors, not the pointers and ``Int32`` extents of
``dense_blockscaled_gemm_persistent``, so their tensors are described here as upstream's
``run()`` builds them (``dense_blockscaled_gemm_persistent_prefetch.py`` L2313-L2430, the
same lines in ``_amax.py`` L2192-L2316); the formats, the scale-factor layout and the
reference stay :mod:`cute_blockscaled.formats`'.

What upstream's ``cutlass.torch.cute_tensor_like`` does for 8-bit and 4-bit types, and what
is done here: one uint8 byte of storage per element, the CuTe element type set on the tensor
(so an FP4 operand (L, M, K) occupies the first half of its (L, M, K) byte buffer, packed two
per byte, and the rest is unused), layouts dynamic with the contiguous extent marked
divisible by 32 (FP4 A/B) or 16 (``mark_compact_shape_dynamic``, prefetch L2330-L2344:
upstream marks C with the A/B value too); the scale factors as the 6-mode view
``(32, 4, MN/128, 4, SFK/4, L)`` of the blocked storage (``create_scale_factor_tensor``,
``mma_permute_order`` (3, 4, 1, 5, 2, 0)), of which the kernel uses only the address
(``cute.make_tensor(sfa_tensor.iterator, tile_atom_to_shape_SF(...))``, prefetch
L498-L507).

``kernelplan.dtypes`` has no row for ``Float8E8M0FNU`` (the MX scale type), so
:class:`ElementSpec` sets any DSL element type by its ``cutlass`` name itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from kernelplan import ShapeError, TensorSpec

from . import formats as fm
from .formats import BlockScaledGemmProblem


@dataclass(frozen=True)
class ElementSpec(TensorSpec):
    """A :class:`TensorSpec` whose ``element`` is any ``cutlass`` numeric type name (the
    table of :mod:`kernelplan.dtypes` need not list it)."""

    def _plain(self) -> TensorSpec:
        return TensorSpec(
            **{f.name: getattr(self, f.name) for f in fields(TensorSpec)} | {"element": None}
        )

    def _element(self):
        import cutlass

        return getattr(cutlass, self.element)

    def to_cute(self, storage):
        t = self._plain().to_cute(storage)
        if self.element:
            t.element_type = self._element()
        return t

    def to_fake_cute(self):
        from cutlass.cute.runtime import make_fake_tensor

        plain = self._plain().to_fake_cute()
        if not self.element:
            return plain
        # the same symbolic shape and strides (and dynamic marks), our element type
        return make_fake_tensor(
            self._element(), plain.shape, plain.stride, assumed_align=self.align
        )


def divisibility(p: BlockScaledGemmProblem) -> int:
    """Upstream's divisibility mark on A's, B's and C's contiguous extent: 32 elements for FP4
    A/B, else 16 (prefetch L2330-L2344)."""
    return 32 if p.dtype == "float4_e2m1fn" else 16


def check_tensor_entry(name: str, p: BlockScaledGemmProblem) -> None:
    """The block format rules of :func:`~cute_blockscaled.dense_blockscaled_gemm_persistent.
    dense_blockscaled_gemm_persistent.check_block_format`, and K and N multiples of the
    divisibility the compile assumes, one line."""
    from .dense_blockscaled_gemm_persistent.dense_blockscaled_gemm_persistent import (
        check_block_format,
    )

    check_block_format(name, p)
    d = divisibility(p)
    for key, extent in (("k", p.k), ("n", p.n)):
        if extent % d:
            raise ShapeError(
                f"{name}: --{key} {extent} is not a multiple of {d} (upstream's compile marks "
                f"A's K and C's N divisible by {d} for {p.dtype} A/B)"
            )


def tensor_specs(p: BlockScaledGemmProblem) -> dict[str, TensorSpec]:
    """a, b, sfa, sfb, c in upstream's argument order (see the module docstring)."""
    d = divisibility(p)
    ab = fm.CUTE[p.dtype]

    def op(shape, element, dtype="uint8", **kw):
        return ElementSpec(
            shape,
            dtype,
            perm=(1, 2, 0),
            leading_dim=1,
            init="zeros",
            element=element,
            divisibility=d,
            **kw,
        )

    def sf(mn):
        return ElementSpec(
            fm.sf_storage_shape(p, mn),
            "uint8",
            perm=(3, 4, 1, 5, 2, 0),
            leading_dim=3,
            init="zeros",
            element=fm.CUTE[p.sf_dtype],
        )

    c8 = fm.bits(p.c_dtype) == 8
    return {
        "a": op((p.l, p.m, p.k), ab),
        "b": op((p.l, p.n, p.k), ab),
        "sfa": sf(p.m),
        "sfb": sf(p.n),
        "c": op((p.l, p.m, p.n), fm.CUTE[p.c_dtype] if c8 else None, p.c_dtype, role="output"),
    }


def prepare_inputs(p: BlockScaledGemmProblem, specs, seed: int, device: str) -> dict[str, Any]:
    """:func:`cute_blockscaled.formats.prepare_inputs`' values, stored as this entry takes
    them: FP4 packed into the first half of an (L, MN, K) byte buffer, FP8 as its bytes, the
    blocked scale factors as they are."""
    import torch

    vals = fm.prepare_inputs(p, fm.tensor_specs(p), seed, device)
    out = dict(vals)
    for name in ("a", "b"):
        x = vals[name]
        if p.dtype == "float4_e2m1fn":
            buf = torch.zeros(specs[name].shape, dtype=torch.uint8, device=device)
            buf.view(-1)[: x.numel()] = x.reshape(-1)
            out[name] = buf
        else:
            out[name] = x.view(torch.uint8)
    out["c"] = specs["c"].allocate(device=device)
    return out


def format_view(p: BlockScaledGemmProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs as :mod:`cute_blockscaled.formats` stores them (FP4 (L, MN, K/2) packed
    bytes, FP8 typed), read back from this entry's storage."""
    import torch

    out = dict(inputs)
    for name, rows in (("a", p.m), ("b", p.n)):
        x = inputs[name]
        if p.dtype == "float4_e2m1fn":
            n = p.l * rows * p.k // 2
            out[name] = x.reshape(-1)[:n].view(p.l, rows, p.k // 2)
        else:
            out[name] = x.view(getattr(torch, p.dtype))
    return out


def reference(p: BlockScaledGemmProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return fm.reference(p, format_view(p, inputs))
