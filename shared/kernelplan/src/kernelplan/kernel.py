"""What a plan hands the harness: a compiled CuTe DSL kernel (``CuteKernel``) or a peer
implementation (``TorchKernel``), plus ``TensorSpec``, the description of one tensor argument
from which real inputs (on the GPU), CuTe tensors and fake CuTe tensors (no memory, for
compiling on any machine) are all derived.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import KernelPlanError

#: Stands for the CUDA stream in a CuteKernel's argument tuple; replaced at each launch by the
#: current torch stream, so launches follow ``torch.cuda.stream(...)`` and graph capture.
STREAM = object()


class Const:
    """A compile-time argument (``cutlass.Constexpr`` in the host function's signature): passed
    to ``cute.compile``, left out of every launch of the compiled function (which would reject
    it as an extra argument)."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def __repr__(self) -> str:
        return f"Const({self.value!r})"


@dataclass(frozen=True)
class TensorSpec:
    """One tensor argument.

    Attributes:
        shape: the storage shape, allocated row-major contiguous (e.g. GEMM A as (L, M, K)).
        dtype: torch dtype name of the storage ("float16", "bfloat16", "float32", "int32",
            "float8_e4m3fn", ...).
        perm: the kernel sees ``storage.permute(perm)`` (e.g. (1, 2, 0) turns (L, M, K) into
            the CUTLASS (M, K, L) view); None keeps the storage order.
        role: "input" or "output" (outputs are poisoned before a checked run).
        init: "randn" (normal * scale), "uniform" (U(-scale, scale)), "randint" (integers
            drawn uniformly from [-scale, scale], as the CUTLASS examples' own runs use; such
            values have few mantissa bits set, which lowers the tensor cores' power draw),
            "zeros" or "empty".
        scale: see init.
        leading_dim: mode of the kernel's view with stride 1, marked dynamic as
            ``mark_layout_dynamic(leading_dim=...)`` does; None keeps the layout static.
        align: bytes the base pointer is assumed aligned to (``assumed_align``).
    """

    shape: tuple[int, ...]
    dtype: str
    perm: tuple[int, ...] | None = None
    role: str = "input"
    init: str = "randn"
    scale: float = 1.0
    leading_dim: int | None = None
    align: int = 16

    def view_shape(self) -> tuple[int, ...]:
        return tuple(self.shape[i] for i in self.perm) if self.perm else tuple(self.shape)

    def view_stride(self) -> tuple[int, ...]:
        strides, acc = [0] * len(self.shape), 1
        for i in reversed(range(len(self.shape))):
            strides[i] = acc
            acc *= self.shape[i]
        return tuple(strides[i] for i in self.perm) if self.perm else tuple(strides)

    def nbytes(self) -> int:
        import torch

        n = 1
        for s in self.shape:
            n *= s
        return n * torch.empty((), dtype=getattr(torch, self.dtype)).element_size()

    # -- materialisation -------------------------------------------------------------------
    def allocate(self, generator=None, device: str = "cuda"):
        """A new storage tensor on ``device``, initialised as ``init`` says."""
        import torch

        dt = getattr(torch, self.dtype)
        if self.init in ("zeros", "empty") or not (dt.is_floating_point or dt == torch.int8):
            t = torch.zeros(self.shape, dtype=dt, device=device)
            return t
        base = torch.float32
        if self.init == "randn":
            t = torch.randn(self.shape, dtype=base, device=device, generator=generator)
        elif self.init == "uniform":
            t = torch.rand(self.shape, dtype=base, device=device, generator=generator) * 2 - 1
        elif self.init == "randint":
            lim = int(self.scale)
            t = torch.randint(-lim, lim + 1, self.shape, device=device, generator=generator)
            return t.to(dt)
        else:
            raise KernelPlanError(
                f"unknown init {self.init!r} (randn, uniform, randint, zeros, empty)"
            )
        return (t * self.scale).to(dt)

    def kernel_view(self, storage):
        return storage.permute(*self.perm) if self.perm else storage

    def to_cute(self, storage):
        """A CuTe tensor over ``storage`` (a real device tensor) as the kernel expects it."""
        from cutlass.cute.runtime import from_dlpack

        t = from_dlpack(self.kernel_view(storage), assumed_align=self.align)
        if self.leading_dim is not None:
            t = t.mark_layout_dynamic(leading_dim=self.leading_dim)
        return t

    def to_fake_cute(self):
        """A fake CuTe tensor (no memory) with this spec's dtype, view and dynamic marks."""
        import cutlass.cute as cute
        from cutlass.cute.runtime import make_fake_tensor

        shape, stride = self.view_shape(), self.view_stride()
        if self.leading_dim is not None:
            # as from_dlpack(...).mark_layout_dynamic() presents a real tensor: 32-bit dynamic
            # extents, 64-bit dynamic strides, the leading stride static 1
            shape = tuple(cute.sym_int() for _ in shape)
            stride = tuple(
                1 if i == self.leading_dim else cute.sym_int64() for i in range(len(stride))
            )
        return make_fake_tensor(cutlass_dtype(self.dtype), shape, stride, assumed_align=self.align)


def cutlass_dtype(torch_name: str):
    """torch dtype name -> CuTe DSL numeric type.

    Raises:
        KernelPlanError: a dtype the DSL has no type for.
    """
    import cutlass

    table = {
        "float16": cutlass.Float16,
        "bfloat16": cutlass.BFloat16,
        "float32": cutlass.Float32,
        "float8_e4m3fn": cutlass.Float8E4M3FN,
        "float8_e5m2": cutlass.Float8E5M2,
        "int8": cutlass.Int8,
        "uint8": cutlass.Uint8,
        "int32": cutlass.Int32,
        "int64": cutlass.Int64,
    }
    try:
        return table[torch_name]
    except KeyError:
        raise KernelPlanError(f"no CuTe DSL type for torch dtype {torch_name}") from None


class CuteKernel:
    """A CuTe DSL host function (``@cute.jit`` function or object with a ``@cute.jit``
    ``__call__``), compiled once per ``key`` and launched on the current torch stream.

    Args:
        name: for messages and records.
        fn: what ``cute.compile`` takes first.
        args: maps the CuTe tensors (by spec name) to the positional argument tuple of ``fn``;
            put :data:`STREAM` where the CUDA stream goes and wrap compile-time values in
            :class:`Const`.
        specs: the tensor arguments, by name.
        key: everything the compiled code depends on besides the DSL/CUTLASS versions
            (config, static shapes, dtypes); with the arch it indexes the compile cache.
        options: ``cute.compile(..., options=...)`` string, if any.
        meta: facts to record with the kernel (e.g. a ``max_active_clusters`` baked into the
            code, and where its value came from).
    """

    _cache: dict[tuple, Any] = {}
    _lock = threading.Lock()

    def __init__(
        self,
        name: str,
        fn: Any,
        args: Callable[[Mapping[str, Any]], tuple],
        specs: Mapping[str, TensorSpec],
        key: tuple,
        options: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ):
        self.name, self.fn, self.args_fn, self.specs = name, fn, args, dict(specs)
        self.key, self.options = key, options
        self.meta = dict(meta or {})
        self.compile_seconds: float | None = None

    # -- arguments --------------------------------------------------------------------------
    def cute_args(self, inputs: Mapping[str, Any]) -> tuple:
        cute_inputs = {n: s.to_cute(inputs[n]) for n, s in self.specs.items()}
        return tuple(self.args_fn(cute_inputs))

    def fake_args(self) -> tuple:
        """The argument tuple with fake tensors and a fake stream: compiles on any machine."""
        from cutlass.cute.runtime import make_fake_stream

        fakes = {n: s.to_fake_cute() for n, s in self.specs.items()}
        return self.compile_args(tuple(self.args_fn(fakes)), make_fake_stream())

    @staticmethod
    def compile_args(args: tuple, stream: Any) -> tuple:
        """What ``cute.compile`` takes: the stream filled in, Const values unwrapped."""
        return tuple(
            stream if a is STREAM else a.value if isinstance(a, Const) else a for a in args
        )

    @staticmethod
    def current_stream():
        import cuda.bindings.driver as cuda
        import torch

        return cuda.CUstream(torch.cuda.current_stream().cuda_stream)

    # -- compile and launch ----------------------------------------------------------------
    def compile(self, args: tuple) -> Any:
        """Compile for the current device (once per key); returns the compiled function."""
        import cutlass.cute as cute

        ckey = (self.key, "device")
        with self._lock:
            if ckey in self._cache:
                return self._cache[ckey]
            t0 = time.perf_counter()
            kw = {"options": self.options} if self.options else {}
            compiled = cute.compile(self.fn, *args, **kw)
            self.compile_seconds = time.perf_counter() - t0
            self._cache[ckey] = compiled
            return compiled

    def bind(self, inputs: Mapping[str, Any]) -> Callable[[], Any]:
        """A zero-argument launcher of the compiled kernel over ``inputs`` (torch tensors on
        the GPU, by spec name). Compiles on first use; conversions happen here, not per launch.
        """
        args = self.cute_args(inputs)
        compiled = self.compile(self.compile_args(args, self.current_stream()))
        runtime = [a for a in args if not isinstance(a, Const)]
        stream_at = [i for i, a in enumerate(runtime) if a is STREAM]
        current_stream = self.current_stream

        def launch() -> Any:
            call = list(runtime)
            for i in stream_at:
                call[i] = current_stream()
            return compiled(*call)

        return launch


class TorchKernel:
    """A peer implementation: ``fn(inputs)`` writes the outputs in place (e.g. cuBLAS through
    ``torch.matmul(..., out=...)``)."""

    compile_seconds = None

    def __init__(self, name: str, fn: Callable[[Mapping[str, Any]], Any]):
        self.name, self.fn = name, fn

    def bind(self, inputs: Mapping[str, Any]) -> Callable[[], Any]:
        fn = self.fn
        return lambda: fn(inputs)
