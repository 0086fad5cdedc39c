"""One compile for every shape: CuTe tensors whose shapes and strides are runtime values, a
compile cache keyed by what stays static, and fake tensors of the same static facts to compile
on a machine without a GPU.

Shown in knowledge/languages/cute-dsl/optimizations/dynamic-layout-one-compile-all-shapes.md.
"""

# ruff: noqa: E402  (the shown region starts with its own imports)

SM = "generic"

# snippet:begin
import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack, make_fake_tensor

_cache = {}


def as_dynamic(t, leading_dim):
    """Real tensor -> CuTe tensor whose shape and non-unit strides are runtime values."""
    return from_dlpack(t, assumed_align=16).mark_layout_dynamic(leading_dim=leading_dim)


def fake_dynamic(dtype, rank, leading_dim):
    """Same static facts, no memory: compiles on any machine (CPU included)."""
    shape = tuple(cute.sym_int() for _ in range(rank))
    stride = tuple(1 if i == leading_dim else cute.sym_int() for i in range(rank))
    return make_fake_tensor(dtype, shape, stride, assumed_align=16)


def get_compiled(kernel_obj, config_key, a, b, c, stream):
    # dtypes and layouts' static parts belong in the key; M, N, K, L do not
    key = (config_key, a.element_type, b.element_type, c.element_type)
    if key not in _cache:
        _cache[key] = cute.compile(kernel_obj, a, b, c, stream)
    return _cache[key]


# snippet:end


@cute.kernel
def _add_kernel(ga: cute.Tensor, gb: cute.Tensor, gc: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * 128 + tidx
    if i < cute.size(ga, mode=[0]):
        for j in cutlass.range(cute.size(ga, mode=[1])):
            gc[i, j] = ga[i, j] + gb[i, j]


@cute.jit
def add_rows(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream):
    """c = a + b for 2-D tensors, one thread per row (a kernel to compile once)."""
    grid = [(cute.size(a, mode=[0]) + 127) // 128, 1, 1]
    _add_kernel(a, b, c).launch(grid=grid, block=[128, 1, 1], stream=stream)


def compile_snippet():
    from cutlass.cute.runtime import make_fake_stream

    a, b, c = (fake_dynamic(cutlass.Float32, 2, leading_dim=1) for _ in range(3))
    get_compiled(add_rows, "rows", a, b, c, make_fake_stream())
    get_compiled(add_rows, "rows", a, b, c, make_fake_stream())
    assert len(_cache) == 1
    return "compiled once from fake tensors with symbolic shapes and strides"


def check():
    """GPU: three shapes, one compile, each result against torch."""
    import torch
    from cutlass.torch import current_stream

    _cache.clear()
    for m, n in ((7, 5), (300, 64), (1000, 3)):
        a, b = torch.randn(m, n, device="cuda"), torch.randn(m, n, device="cuda")
        c = torch.full_like(a, float("nan"))
        args = [as_dynamic(t, leading_dim=1) for t in (a, b, c)]
        get_compiled(add_rows, "rows", *args, current_stream())(*args, current_stream())
        torch.cuda.synchronize()
        assert torch.equal(c, a + b), (m, n)
    assert len(_cache) == 1, len(_cache)
    return "shapes (7, 5), (300, 64), (1000, 3): one compile, results equal torch"
