"""Programmatic dependent launch: two kernels in one stream, the second launched with
`use_pdl=True` so that its prologue (loading an operand the first kernel does not write) may
run while the first kernel's last CTAs are still running.

primary:   h = a * a + 1          (triggers its dependents after its last global load)
dependent: y = h * w              (loads w, then griddepcontrol_wait, then loads h)

Both are launched with use_pdl; the dependent compiles its wait in through a Constexpr flag
(one compile per role). check() runs the chain several times on fresh NaN-poisoned outputs
and compares y with torch.

Shown in knowledge/languages/cute-dsl/optimizations/programmatic-dependent-launch.md.
"""

import cutlass
import cutlass.cute as cute

SM = "sm_90a"
EXPECT = "pass"
TIMEOUT_S = 120

THREADS = 128


def grid_for(t: cute.Tensor):
    return [(cute.size(t) + THREADS - 1) // THREADS, 1, 1]


@cute.kernel
def primary_kernel(g_a: cute.Tensor, g_h: cute.Tensor):
    i = cute.arch.block_idx()[0] * THREADS + cute.arch.thread_idx()[0]
    a = cutlass.Float32(0.0)
    if i < cute.size(g_a):
        a = g_a[i]
    # last global load done: dependents may be scheduled (a hint, not a correctness point)
    cute.arch.griddepcontrol_launch_dependents()
    if i < cute.size(g_a):
        g_h[i] = a * a + 1.0


# snippet:begin
@cute.kernel
def consumer_kernel(
    g_prev_out: cute.Tensor,
    g_weights: cute.Tensor,
    g_out: cute.Tensor,
    is_dependent: cutlass.Constexpr,
):
    i = cute.arch.block_idx()[0] * THREADS + cute.arch.thread_idx()[0]
    inside = i < cute.size(g_out)
    # prologue: only data the previous kernel does not write
    w = cutlass.Float32(0.0)
    if inside:
        w = g_weights[i]
    if cutlass.const_expr(is_dependent):  # trace-time branch: no instruction when False
        cute.arch.griddepcontrol_wait()  # from here on, g_prev_out is complete and visible
    x = cutlass.Float32(0.0)
    if inside:
        x = g_prev_out[i]
    # the next kernel in the chain may start its own prologue now
    cute.arch.griddepcontrol_launch_dependents()
    if inside:
        g_out[i] = x * w


@cute.jit
def launch_consumer(
    prev_out: cute.Tensor,
    weights: cute.Tensor,
    out: cute.Tensor,
    stream,
    use_pdl: cutlass.Constexpr,
    is_dependent: cutlass.Constexpr,
):
    consumer_kernel(prev_out, weights, out, is_dependent).launch(
        grid=grid_for(out), block=[THREADS, 1, 1], stream=stream, use_pdl=use_pdl
    )


# Host: compile once per role (the Constexpr values are part of the compile), launch without them:
#   f = cute.compile(launch_consumer, prev, w, out, stream, True, True)
#   f(prev, w, out, stream)
# snippet:end


@cute.jit
def launch_primary(a: cute.Tensor, h: cute.Tensor, stream, use_pdl: cutlass.Constexpr):
    primary_kernel(a, h).launch(
        grid=grid_for(h), block=[THREADS, 1, 1], stream=stream, use_pdl=use_pdl
    )


def _compile_pair(a, h, w, y, stream):
    first = cute.compile(launch_primary, a, h, stream, True)
    second = cute.compile(launch_consumer, h, w, y, stream, True, True)
    return first, second


def compile_snippet():
    """CPU: compile both roles for SM (CUTE_DSL_ARCH) with fake tensors."""
    from cutlass.cute.runtime import make_fake_stream, make_fake_tensor

    n = cute.sym_int()
    a, h, w, y = (make_fake_tensor(cutlass.Float32, (n,), (1,), assumed_align=16) for _ in "ahwy")
    _compile_pair(a, h, w, y, make_fake_stream())
    return "primary and dependent compiled, both with use_pdl"


def check(n=1 << 20, repeats=20):
    """H200: the chain h = a*a + 1, y = h*w, launched back to back with PDL; compare y."""
    import torch
    from cutlass.cute.runtime import from_dlpack
    from cutlass.torch import current_stream

    torch.manual_seed(0)
    a = torch.randn(n, device="cuda")
    w = torch.randn(n, device="cuda")
    h = torch.empty(n, device="cuda")
    y = torch.empty(n, device="cuda")
    ta, tw, th, ty = (from_dlpack(t, assumed_align=16) for t in (a, w, h, y))
    stream = current_stream()
    first, second = _compile_pair(ta, th, tw, ty, stream)
    for r in range(repeats):
        h.fill_(float("nan"))
        y.fill_(float("nan"))
        a.add_(0.0 if r == 0 else 1e-3)  # new inputs each time: a stale h would be caught
        ref = (a * a + 1.0) * w
        first(ta, th, stream)
        second(th, tw, ty, stream)  # no Constexpr arguments at launch
        torch.cuda.synchronize()
        err = (y - ref).abs().max().item()
        assert torch.isfinite(y).all() and err <= 1e-5 * ref.abs().max().item(), (r, err)
    return f"{repeats} PDL chains of {n} elements, max abs error {err:.3g}"
