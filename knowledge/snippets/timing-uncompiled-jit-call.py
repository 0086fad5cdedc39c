"""Time the object that cute.compile returns, never the @cute.jit function (which re-traces,
and with no_cache=True recompiles, on every call); and a guard that tells them apart.

Shown in knowledge/languages/cute-dsl/anti-patterns/timing-uncompiled-jit-call.md.
"""

# ruff: noqa: E402  (the shown region starts with its own imports)

SM = "generic"

# snippet:begin
import cutlass.cute as cute
import torch


def time_compiled(host_function, args, reps=100):
    # WRONG: `for _ in range(reps): host_function(*args)` re-traces the @cute.jit function on
    # every call (and with no_cache=True recompiles it): that is what such a loop measures.
    # RIGHT: compile once, time the compiled object; pass only runtime arguments
    compiled = cute.compile(host_function, *args)
    compiled(*args)  # warm-up (module load, first launch)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        compiled(*args)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000.0 / reps  # us per launch


def is_uncompiled_jit(fn) -> bool:
    """Guard for a harness: the DSL decorator marks the function (or a bound method's
    __func__)."""
    target = getattr(fn, "__func__", fn)
    return (
        getattr(target, "_dsl_cls", None) is not None
        or getattr(target, "_decorator_kind", None) is not None
    )


# snippet:end


def compile_snippet():
    from kernelplan.kb.snippets import sibling

    axpy = sibling(__file__, "_axpy")
    (a, b, c), stream = axpy.fake_vectors()
    compiled = cute.compile(axpy.axpy, a, b, c, 2.0, stream)
    assert is_uncompiled_jit(axpy.axpy), "the guard misses a @cute.jit function"
    assert not is_uncompiled_jit(compiled), "the guard flags a compiled function"
    return "guard: @cute.jit function flagged, compiled object not"


def check():
    """GPU: the compiled launch is correct and the traced call costs far more per call."""
    import time

    from cutlass.cute.runtime import from_dlpack
    from cutlass.torch import current_stream

    from kernelplan.kb.snippets import sibling

    axpy = sibling(__file__, "_axpy")
    x, y = torch.randn(1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda")
    z = torch.full_like(x, float("nan"))
    args = [from_dlpack(t, assumed_align=16) for t in (x, y, z)] + [2.0, current_stream()]
    us = time_compiled(axpy.axpy, args)
    assert torch.allclose(z, x + 2.0 * y)
    t0 = time.perf_counter()
    for _ in range(3):
        axpy.axpy(*args)  # the wrong way, timed on the host
    torch.cuda.synchronize()
    traced_us = (time.perf_counter() - t0) / 3 * 1e6
    assert traced_us > us, (traced_us, us)
    return f"compiled {us:.1f} us per launch; uncompiled @cute.jit call {traced_us:.0f} us"
