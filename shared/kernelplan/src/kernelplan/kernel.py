"""What a plan hands the harness: a compiled CuTe DSL kernel (``CuteKernel``) or a peer
implementation (``TorchKernel``), plus ``TensorSpec``, the description of one tensor argument
from which real inputs (on the GPU), CuTe tensors and fake CuTe tensors (no memory, for
compiling on any machine) are all derived.
"""

from __future__ import annotations

import threading
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
            "float8_e4m3fn", "uint8", ...).
        perm: the kernel sees ``storage.permute(perm)`` (e.g. (1, 2, 0) turns (L, M, K) into
            the CUTLASS (M, K, L) view); None keeps the storage order.
        role: "input", "output" (outputs are poisoned before a checked run) or "scratch" (a
            workspace the kernel writes before it reads, such as a split-KV workspace: poisoned
            with the outputs before the last of several checked launches, so a launch that
            reads what an earlier one left fails the check).
        init: "randn" (normal * scale), "uniform" (U(-scale, scale)), "randint" (integers
            drawn uniformly from [-scale, scale], as the CUTLASS examples' own runs use; such
            values have few mantissa bits set, which lowers the tensor cores' power draw; for
            an integer dtype, integers in [0, scale]), "zeros" or "empty". Tensors whose values
            must agree with each other (page tables, sequence lengths, pointer arrays of a
            grouped GEMM) are filled by the workload's ``prepare_inputs``.
        scale: see init.
        leading_dim: mode of the kernel's view with stride 1, marked dynamic as
            ``mark_layout_dynamic(leading_dim=...)`` does; None keeps the layout static.
        align: bytes the base pointer is assumed aligned to (``assumed_align``).
        element: the CuTe element type when it differs from the storage's (``"TFloat32"``
            stored as float32): set on the CuTe tensor as upstream's ``cute_tensor_like``
            does.
        divisibility: with ``leading_dim``, the contiguous extent (and every other stride) is
            marked divisible by it (``mark_compact_shape_dynamic(mode=leading_dim,
            divisibility=...)``): the compiled code may assume it, so a problem must honour it.
    """

    shape: tuple[int, ...]
    dtype: str
    perm: tuple[int, ...] | None = None
    role: str = "input"
    init: str = "randn"
    scale: float = 1.0
    leading_dim: int | None = None
    align: int = 16
    element: str | None = None
    divisibility: int = 1

    def view_shape(self) -> tuple[int, ...]:
        return tuple(self.shape[i] for i in self.perm) if self.perm else tuple(self.shape)

    def view_stride(self) -> tuple[int, ...]:
        strides, acc = [0] * len(self.shape), 1
        for i in reversed(range(len(self.shape))):
            strides[i] = acc
            acc *= self.shape[i]
        return tuple(strides[i] for i in self.perm) if self.perm else tuple(strides)

    def nbytes(self) -> int:
        from .dtypes import nbytes

        n = 1
        for s in self.shape:
            n *= s
        return int(n * nbytes(self.dtype))

    def signature(self) -> tuple:
        """What compiled code specialises on: element and storage types, the view's rank,
        its static shape and strides unless the layout is dynamic, the dynamic marks and the
        alignment. Part of every compile key."""
        layout: tuple = (
            ("dynamic", len(self.shape), self.leading_dim, self.divisibility)
            if self.leading_dim is not None
            else ("static", self.view_shape(), self.view_stride())
        )
        return (self.dtype, self.element, layout, self.align)

    # -- materialisation -------------------------------------------------------------------
    def allocate(self, generator=None, device: str = "cuda"):
        """A new storage tensor on ``device``, initialised as ``init`` says."""
        import torch

        dt = getattr(torch, self.dtype)
        if self.init in ("zeros", "empty"):
            return torch.zeros(self.shape, dtype=dt, device=device)
        if not dt.is_floating_point:
            if self.init != "randint":
                return torch.zeros(self.shape, dtype=dt, device=device)
            hi = int(self.scale) + 1
            return torch.randint(0, hi, self.shape, device=device, generator=generator).to(dt)
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
            if self.divisibility > 1:
                t = t.mark_compact_shape_dynamic(
                    mode=self.leading_dim, divisibility=self.divisibility
                )
        if self.element:
            from .dtypes import cute_type

            t.element_type = cute_type(self.element)
        return t

    def to_fake_cute(self):
        """A fake CuTe tensor (no memory) with this spec's types, view and dynamic marks."""
        import cutlass.cute as cute
        from cutlass.cute.runtime import make_fake_tensor

        from .dtypes import cute_type

        shape, stride = self.view_shape(), self.view_stride()
        if self.leading_dim is not None:
            # as from_dlpack(...).mark_layout_dynamic() presents a real tensor: 32-bit dynamic
            # extents, 64-bit dynamic strides, the leading stride static 1; a divisibility
            # mark applies to the contiguous extent and to the other strides
            d = self.divisibility
            lead = self.leading_dim
            shape = tuple(
                cute.sym_int(divisibility=d) if i == lead and d > 1 else cute.sym_int()
                for i in range(len(shape))
            )
            stride = tuple(
                1 if i == lead else (cute.sym_int64(divisibility=d) if d > 1 else cute.sym_int64())
                for i in range(len(stride))
            )
        element = cute_type(self.element or self.dtype)
        return make_fake_tensor(element, shape, stride, assumed_align=self.align)


def cutlass_dtype(torch_name: str):
    """torch dtype name -> CuTe DSL numeric type (see :mod:`kernelplan.dtypes`).

    Raises:
        KernelPlanError: a dtype the DSL has no type for.
    """
    from .dtypes import cute_type

    return cute_type(torch_name)


class CuteKernel:
    """A CuTe DSL host function (``@cute.jit`` function or object with a ``@cute.jit``
    ``__call__``), compiled once per compile key and launched on the current torch stream.

    Args:
        name: for messages and records.
        fn: what ``cute.compile`` takes first.
        args: maps the CuTe tensors (by spec name) to the positional argument tuple of ``fn``;
            put :data:`STREAM` where the CUDA stream goes and wrap compile-time values in
            :class:`Const`.
        specs: the tensor arguments, by name.
        options: ``cute.compile(..., options=...)`` string, if any.
        meta: facts to record with the kernel (e.g. a ``max_active_clusters`` baked into the
            code, and where its value came from).
        tvm_ffi: compile with ``--enable-tvm-ffi`` from the fake arguments (dynamic layouts:
            one compile for every shape) and launch with the torch tensors themselves, the
            DSL's TVM-FFI calling path (a TVM-FFI function rejects ``from_dlpack`` CuTe
            tensors made without ``enable_tvm_ffi=True``).
        setup: per input set, once at :meth:`bind`, outside the timed launches:
            ``setup(inputs)`` fills tensors the kernel reads as data that the host plans from
            the problem and the target (a work list of the sequences' pages, as a peer's
            planner does in :class:`TorchKernel`'s ``setup``); it writes into ``inputs`` (torch
            tensors, by spec name) in place and returns nothing.

    The compile key is set by :meth:`kernelplan.KernelPlan.kernel` from (implementation,
    config, the problem fields the code specialises on, target SM, every tensor's
    :meth:`TensorSpec.signature`, the :class:`Const` values, options, the plan's
    ``build_label``, the target's SM count); nothing in an adapter builds it by hand. The
    build label is in it because a plan may choose what to build from fields the code does
    not specialise on (session 29: two problems of one config, built as step 61 and step 62,
    shared one compiled function in a process).
    """

    _cache: dict[tuple, Any] = {}
    _lock = threading.Lock()

    def __init__(
        self,
        name: str,
        fn: Any,
        args: Callable[[Mapping[str, Any]], tuple],
        specs: Mapping[str, TensorSpec],
        options: str | None = None,
        meta: Mapping[str, Any] | None = None,
        *,
        tvm_ffi: bool = False,
        setup: Callable[[Mapping[str, Any]], None] | None = None,
    ):
        self.name, self.fn, self.args_fn, self.specs = name, fn, args, dict(specs)
        self.tvm_ffi = tvm_ffi
        self.setup = setup
        if tvm_ffi:
            options = " ".join(o for o in (options, "--enable-tvm-ffi") if o)
        self.options = options
        self.meta = dict(meta or {})
        self.key: tuple = (name,)
        self.compile_seconds: float | None = None
        self.compile_cache: dict[str, Any] | None = None

    def const_values(self) -> tuple:
        """The compile-time (:class:`Const`) values of the argument tuple, in order."""
        placeholders = {n: n for n in self.specs}
        return tuple(a.value for a in self.args_fn(placeholders) if isinstance(a, Const))

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
        """Compile for the current device (once per key in this process, and across
        processes through :mod:`kernelplan.jitcache`, the DSL's export/load path); returns
        the compiled function. ``compile_seconds`` is the compile time, or the load time on
        a persistent-cache hit (``compile_cache`` says which)."""
        from . import jitcache

        ckey = (self.key, "device")
        with self._lock:
            if ckey in self._cache:
                return self._cache[ckey]
            compiled, info = jitcache.load_or_compile(
                self.fn,
                args,
                key=jitcache.cute_kernel_key(self),
                options=self.options,
                arch=jitcache.device_arch(),
            )
            self.compile_seconds = info["seconds"]
            self.compile_cache = info
            self._cache[ckey] = compiled
            return compiled

    def bind(self, inputs: Mapping[str, Any]) -> Callable[[], Any]:
        """A zero-argument launcher of the compiled kernel over ``inputs`` (torch tensors on
        the GPU, by spec name). Compiles on first use; conversions happen here, not per launch.
        Runs ``setup`` on ``inputs`` first, if there is one.
        """
        if self.setup is not None:
            self.setup(inputs)
        if self.tvm_ffi:
            compiled = self.compile(self.fake_args())
            views = {n: s.kernel_view(inputs[n]) for n, s in self.specs.items()}
            args = tuple(self.args_fn(views))
        else:
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
    ``torch.matmul(..., out=...)``).

    Args:
        name: for messages and records.
        fn: the launch; with ``setup``, called as ``fn(inputs, state)``.
        meta: facts recorded with every run (peer version, backend, what a launch includes).
        setup: per input set, once, outside the timed launches: ``setup(inputs) -> state``
            (a planner that reads the page table, a JIT build, a gather done at bind).
    """

    compile_seconds = None

    def __init__(
        self,
        name: str,
        fn: Callable[..., Any],
        meta: Mapping[str, Any] | None = None,
        setup: Callable[[Mapping[str, Any]], Any] | None = None,
    ):
        self.name, self.fn, self.setup = name, fn, setup
        self.meta = dict(meta or {})

    def bind(self, inputs: Mapping[str, Any]) -> Callable[[], Any]:
        fn = self.fn
        if self.setup is None:
            return lambda: fn(inputs)
        state = self.setup(inputs)
        return lambda: fn(inputs, state)
