"""The one dtype table: torch storage name, CuTe DSL element type, bits, unit roundoff, and
the tensor-peak class the roofline uses.

Storage and element type differ where the DSL reinterprets the bytes (TFloat32 stored as
float32; an int4 or fp4 tensor stored packed in uint8): :class:`kernelplan.TensorSpec` carries
both. Names follow torch (``float16``, ``float8_e4m3fn``) for storage and the DSL
(``Float16``, ``TFloat32``, ``Float8E4M3FN``) for elements.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import KernelPlanError


@dataclass(frozen=True)
class DType:
    """One row: ``torch`` (storage name, or None when torch has no such type), ``cute``
    (the DSL's class name in ``cutlass``), ``bits`` per element, ``u`` the unit roundoff of
    a floating format (2^-(mantissa bits + 1); 0 for integers), ``peak`` the column of
    :data:`kernelplan.roofline.PEAKS` that bounds a tensor-core kernel on these inputs."""

    torch: str | None
    cute: str
    bits: int
    u: float
    peak: str

    @property
    def nbytes(self) -> float:
        return self.bits / 8


_ROWS = [
    DType("float16", "Float16", 16, 2.0**-11, "float16"),
    DType("bfloat16", "BFloat16", 16, 2.0**-8, "bfloat16"),
    DType("float32", "Float32", 32, 2.0**-24, "float32"),
    DType(None, "TFloat32", 32, 2.0**-11, "tfloat32"),
    DType("float8_e4m3fn", "Float8E4M3FN", 8, 2.0**-4, "float8"),
    DType("float8_e5m2", "Float8E5M2", 8, 2.0**-3, "float8"),
    DType("int8", "Int8", 8, 0.0, "int8"),
    DType("uint8", "Uint8", 8, 0.0, "int8"),
    DType("int32", "Int32", 32, 0.0, "int8"),
    DType("int64", "Int64", 64, 0.0, "int8"),
    DType(None, "Int4", 4, 0.0, "int8"),
    DType(None, "Float4E2M1FN", 4, 2.0**-2, "float4"),
]
BY_TORCH = {r.torch: r for r in _ROWS if r.torch}
BY_CUTE = {r.cute: r for r in _ROWS}
#: What ``"tfloat32"`` (the torch-like spelling some records use) means.
BY_TORCH["tfloat32"] = BY_CUTE["TFloat32"]


def dtype(name: str) -> DType:
    """The row for a torch name (``"bfloat16"``) or a DSL name (``"BFloat16"``).

    Raises:
        KernelPlanError: a dtype the table lacks (add a row here).
    """
    name = str(name).removeprefix("torch.")
    row = BY_TORCH.get(name) or BY_CUTE.get(name)
    if row is None:
        known = ", ".join(sorted(BY_TORCH) + sorted(BY_CUTE))
        raise KernelPlanError(f"unknown dtype {name!r} (known: {known})")
    return row


def nbytes(name: str) -> float:
    """Bytes per element (0.5 for 4-bit types)."""
    return dtype(name).nbytes


def cute_type(name: str):
    """The DSL's numeric type (``cutlass.BFloat16``) for a torch or DSL name.

    Raises:
        KernelPlanError: unknown dtype, or one this DSL version lacks.
    """
    import cutlass

    row = dtype(name)
    try:
        return getattr(cutlass, row.cute)
    except AttributeError:
        raise KernelPlanError(f"this nvidia-cutlass-dsl has no cutlass.{row.cute}") from None


def storage_of(name: str) -> str:
    """The torch storage dtype of a DSL element type (TFloat32 -> float32)."""
    row = dtype(name)
    if row.torch:
        return row.torch
    return {"TFloat32": "float32", "Int4": "uint8", "Float4E2M1FN": "uint8"}[row.cute]
