"""A tiny elementwise CuTe DSL kernel (c = a + alpha * b on 1-D tensors) that several snippets
use as the kernel they compile, launch or time. Not a snippet itself (its name starts with _)."""

import cutlass
import cutlass.cute as cute

THREADS = 128


@cute.kernel
def axpy_kernel(ga: cute.Tensor, gb: cute.Tensor, gc: cute.Tensor, alpha: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * THREADS + tidx
    if i < cute.size(ga):
        gc[i] = ga[i] + alpha * gb[i]


@cute.jit
def axpy(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, alpha: cutlass.Float32, stream):
    blocks = (cute.size(a) + THREADS - 1) // THREADS
    axpy_kernel(a, b, c, alpha).launch(grid=[blocks, 1, 1], block=[THREADS, 1, 1], stream=stream)


def fake_vectors(n=3):
    """Fake 1-D fp32 tensors of one symbolic length, and a fake stream: compile anywhere."""
    from cutlass.cute.runtime import make_fake_stream, make_fake_tensor

    length = cute.sym_int()
    vecs = [make_fake_tensor(cutlass.Float32, (length,), (1,), assumed_align=16) for _ in range(n)]
    return vecs, make_fake_stream()
