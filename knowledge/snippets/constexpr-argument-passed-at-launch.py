"""A Constexpr argument is consumed by cute.compile: the compiled function takes the runtime
arguments only. A harness marks such values so that it passes them to the compile and leaves
them out of every launch.

Shown in knowledge/languages/cute-dsl/anti-patterns/constexpr-argument-passed-at-launch.md.
"""

import cutlass
import cutlass.cute as cute

SM = "generic"
STREAM = object()  # the harness's placeholder for "the current stream"


@cute.kernel
def _scale_kernel(ga: cute.Tensor, gc: cute.Tensor, factor: cutlass.Constexpr):
    i = cute.arch.block_idx()[0] * 128 + cute.arch.thread_idx()[0]
    if i < cute.size(ga):
        gc[i] = ga[i] * factor


@cute.jit
def scale(a: cute.Tensor, c: cute.Tensor, factor: cutlass.Constexpr, stream):
    """c = factor * a; `factor` is baked into the kernel at compile time."""
    grid = [(cute.size(a) + 127) // 128, 1, 1]
    _scale_kernel(a, c, factor).launch(grid=grid, block=[128, 1, 1], stream=stream)


# snippet:begin
class Const:
    """Harness-side marker: a value given to cute.compile and left out of every launch."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def compile_args(args, stream):
    return tuple(stream if a is STREAM else a.value if isinstance(a, Const) else a for a in args)


def launch_args(args, stream):
    return tuple(stream if a is STREAM else a for a in args if not isinstance(a, Const))


def compile_and_launch(host_fn, args, stream):
    # host function: (a, c, factor: cutlass.Constexpr, stream)
    compiled = cute.compile(host_fn, *compile_args(args, stream))  # Constexpr consumed here
    # WRONG: compiled(*compile_args(args, stream)), i.e. compiled(a, c, 3.0, stream): the
    # compiled function counts its arguments (ARG_WORKSPACE_COUNT_MISMATCH)
    compiled(*launch_args(args, stream))  # RIGHT: runtime arguments only, same order
    return compiled


# snippet:end


def compile_snippet():
    from cutlass.cute.runtime import make_fake_stream, make_fake_tensor

    n = cute.sym_int()
    a, c = (make_fake_tensor(cutlass.Float32, (n,), (1,), assumed_align=16) for _ in range(2))
    args = (a, c, Const(3.0), STREAM)
    stream = make_fake_stream()
    assert len(compile_args(args, stream)) == 4 and len(launch_args(args, stream)) == 3
    cute.compile(scale, *compile_args(args, stream))
    return "compiled with factor=3.0 as a Constexpr; 4 compile arguments, 3 launch arguments"


def check():
    """GPU: the right call computes 3 * a; the wrong call (with the Constexpr) is refused."""
    import torch
    from cutlass.cute.runtime import from_dlpack
    from cutlass.torch import current_stream

    a = torch.randn(1000, device="cuda")
    c = torch.full_like(a, float("nan"))
    args = (from_dlpack(a, assumed_align=16), from_dlpack(c, assumed_align=16), Const(3.0), STREAM)
    compiled = compile_and_launch(scale, args, current_stream())
    torch.cuda.synchronize()
    assert torch.equal(c, a * 3.0)
    try:
        compiled(*compile_args(args, current_stream()))
    except Exception as exc:  # the DSL's argument-count error
        refused = f"{type(exc).__name__}: {str(exc).splitlines()[0][:80]}"
    else:
        raise AssertionError("the compiled function accepted the Constexpr at launch")
    return f"right call equals torch; wrong call refused ({refused})"
