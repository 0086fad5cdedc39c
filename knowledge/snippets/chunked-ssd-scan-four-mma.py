"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/optimizations/chunked-ssd-scan-four-mma.md.
It is not imported or compiled: the four tiled MMAs, their pipelines and the TMEM/SMEM buffers
come from a surrounding tcgen05 kernel that the fragment leaves out.
"""

# ruff: noqa: F821, E402, F841, B018

SM = "sm_100a"
PENDING = "a fragment: its surrounding four-MMA tcgen05 kernel (sm_100a) is not written here yet"

# snippet:begin
import cutlass
import cutlass.cute as cute

# One persistent work item = one (batch, head): the chunks of its sequence run in order in
# this CTA, so the state never leaves it.  Per chunk c (L steps), with s = cumsum(dt * a):
#   INTRA1  G  = C @ B^T                       (L x L, over the state size N)   tensor core
#   PRE     Q  = G * exp(s_m - s_n) * dt_n, 0 where m < n                       pre-intra warps
#   INTRA2  Yd = Q @ X                         (L x D, over L)                  tensor core
#   PRE     Bs = B * exp(s_last - s_n) * dt_n                                   pre-inter warps
#   INTER1  Sc = Bs^T @ X                      (N x D, over L)                  tensor core
#   PRE     S  = exp(s_last) * S + Sc          (fp32 registers; operand of the next INTER2)
#   INTER2  Yo = C @ S_prev                    (L x D, over N)                  tensor core
#   EPI     Y  = Yo * exp(s_m) + Yd (+ D * X)


def segsum_weights(G, s_row, s_col, dt_col, coords, out):
    """Pre-intra: decay-weighted, causally masked Q in fp32, stored in the MMA's input type."""
    t = cute.make_rmem_tensor(G.shape, cutlass.Float32)
    for i in cutlass.range(cute.size(G), unroll_full=True, vectorize=True):
        t[i] = s_col[i] - s_row[i]
    for i in cutlass.range(cute.size(G), unroll_full=True):
        m, n = coords[i]
        if m < n:
            t[i] = cutlass.Float32(-float("inf"))  # exp -> 0: the chunk is causal
    for i in cutlass.range(cute.size(G), unroll_full=True, vectorize=True):
        t[i] = cute.math.exp2(t[i] * LOG2_E, fastmath=True) * dt_col[i] * G[i]
    out.store(t.load().to(io_dtype))


def carry_state(Sc, S, s_last, out):
    """Pre-inter, after INTER1 of this chunk: decay the carried state and add the chunk's."""
    decay = cute.math.exp(s_last, fastmath=True)
    for i in cutlass.range(cute.size(Sc), vectorize=True):
        Sc[i] = decay * S[i] + Sc[i]
    S.store(Sc.load())  # fp32 state stays in registers across chunks
    out.store(Sc.load().to(io_dtype))  # operand of the next chunk's INTER2 (SMEM)
    # first chunk: the INTER2 operand is prefilled with zeros


# snippet:end
