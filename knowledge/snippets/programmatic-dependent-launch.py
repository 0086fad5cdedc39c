"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/optimizations/programmatic-dependent-launch.md,
kept as it stands in the entry until it is
made real code (a kernel that compiles for sm_90a with fake tensors, and a check on the H200).
It is not imported or compiled: names such as the pipelines, tensors and roles come from a
surrounding kernel that the fragment leaves out.
"""

# ruff: noqa: F821, E402, F841, B018, SIM102

SM = "sm_90a"
PENDING = "a fragment: its surrounding kernel is not written yet"

# snippet:begin
import cutlass
import cutlass.cute as cute


@cute.kernel
def consumer_kernel(g_prev_out, g_weights, g_out, is_dependent: cutlass.Constexpr):
    # prologue: only data the previous kernel does not write
    w = load_my_tile(g_weights)
    setup_barriers_and_descriptors()
    if is_dependent:  # trace-time branch: no instruction when False
        cute.arch.griddepcontrol_wait()  # from here on, g_prev_out is complete and visible
    x = load_my_tile(g_prev_out)
    y = compute(x, w)
    # the next kernel in the chain may start its own prologue now
    cute.arch.griddepcontrol_launch_dependents()
    store_my_tile(g_out, y)


@cute.jit
def launch_consumer(
    prev_out, weights, out, stream, use_pdl: cutlass.Constexpr, is_dependent: cutlass.Constexpr
):
    consumer_kernel(prev_out, weights, out, is_dependent).launch(
        grid=grid_for(out), block=[128, 1, 1], stream=stream, use_pdl=use_pdl
    )


# Host: compile once per role (the Constexpr values are part of the compile), launch without them:
#   f = cute.compile(launch_consumer, prev, w, out, stream, True, True)
#   f(prev, w, out, stream)
# snippet:end
