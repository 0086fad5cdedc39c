"""Skip the mbarrier re-wait after a named-barrier hand-off (sm_90a).

Two warpgroups read one TMA-loaded tile B (64 x 64 fp16, K-major) that one mbarrier guards.
Warpgroup 0 (the leader) waits on the mbarrier's phase, computes S = A B^T with WGMMA, waits
for it, stores P = fp16(S) to SMEM, fences the generic stores for the async proxy and arrives
on a named barrier. Warpgroup 1 (the follower) syncs on that named barrier and computes
O = P B^T: its WGMMA reads the same B. The build flag ``rewait`` decides whether the follower
waits on B's mbarrier again between the named barrier and its WGMMA (the conservative form)
or not (the pattern): the phase completed before the leader's wait returned, and the leader
arrived on the named barrier only after that wait and after its own WGMMA on B retired.

The MLA seesaw (packages/mla/src/cute_mla/mla_decode_sm90/seesaw.py) does this with V halves
of a page: step 72 drops warpgroup 1's V0R re-wait after BAR_P0, steps 73/76/77 warpgroup 0's
V1L re-wait (all or some of its four chunks) after BAR_P1.

Shown in
knowledge/languages/cute-dsl/optimizations/skip-mbarrier-rewait-after-named-barrier-handoff.md.
"""

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync, warpgroup

from kernelplan.kb.snippets import sibling

hop = sibling(__file__, "_hopper_tile")

SM = "sm_90a"
EXPECT = "pass"
TIMEOUT_S = 180

T = 64  # M = N = K of both GEMMs: one 64 x 64 tile each
WG = 128
THREADS = 2 * WG
BAR_P = 1  # the hand-off: warpgroup 0 arrives, warpgroup 1 syncs (0 is the CTA barrier)


# snippet:begin
@cute.jit
def leader(bar, tiled_mma, tCrA, tCrB, acc_s, tPsP):
    """Warpgroup 0: the first reader of B. Its wait is the one the data needs."""
    cute.arch.mbarrier_wait(bar, 0)  # phase 0: the TMA bytes of A and B have landed
    tiled_mma.set(warpgroup.Field.ACCUMULATE, False)
    hop.issue_async_mmas(tiled_mma, acc_s, tCrA, tCrB, 0)  # S = A B^T (reads B)
    warpgroup.wait_group(0)  # S retired: this warpgroup's reads of B are over
    rP = cute.make_rmem_tensor(acc_s.layout, cutlass.Float16)
    rP.store(acc_s.load().to(cutlass.Float16))
    for e in cutlass.range_constexpr(cute.size(rP)):
        tPsP[e] = rP[e]
    cute.arch.fence_proxy("async.shared", space="cta")  # P: generic stores -> WGMMA reads
    # after the mbarrier wait and the wait_group: the arrive also says "B is here and read"
    cute.arch.barrier_arrive(barrier_id=BAR_P, number_of_threads=THREADS)


@cute.jit
def follower(bar, tiled_mma, tCrP, tCrB, acc_o, rewait: cutlass.Constexpr):
    """Warpgroup 1: reads B only after the leader's arrive, which followed its own wait."""
    cute.arch.barrier(barrier_id=BAR_P, number_of_threads=THREADS)  # P published
    if cutlass.const_expr(rewait):
        # the conservative build: a try-wait on a phase that completed before the leader's
        # wait returned; it returns at once, but its round trip sits on the hand-off chain
        cute.arch.mbarrier_wait(bar, 0)
    tiled_mma.set(warpgroup.Field.ACCUMULATE, False)
    hop.issue_async_mmas(tiled_mma, acc_o, tCrP, tCrB, 0)  # O = P B^T (reads B again)
    warpgroup.wait_group(0)
    # a TMA reload of B (a next phase) would still go after BOTH warpgroups' wait_group and
    # a barrier that every reader passes: dropping this wait does not drop that ordering


# snippet:end


class Handoff:
    """O (64, 64) fp32 = fp16(A B^T) B^T for A, B (64, 64) fp16 K-major, one CTA of two
    warpgroups; ``rewait`` is the build flag (a Python bool read at trace time)."""

    def __init__(self, rewait: bool):
        self.rewait = rewait

    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, o: cute.Tensor, stream):
        tile = (T, T, T)
        tiled_mma = hop.make_gemm_mma(a, b, tile)
        a_ring, b_ring, a_slot, b_slot = hop.make_ab_rings(a, b, tile, 1)
        tma_a, gA, tma_b, gB = hop.make_ab_tma(a, b, a_slot, b_slot, tile)
        nbytes = hop.slot_bytes(a, b, a_slot, b_slot)

        @cute.struct
        class Storage:
            bars: cute.struct.MemRange[cutlass.Int64, 1]
            sA: cute.struct.Align[cute.struct.MemRange[a.element_type, cute.cosize(a_ring)], 1024]
            sB: cute.struct.Align[cute.struct.MemRange[b.element_type, cute.cosize(b_ring)], 1024]
            sP: cute.struct.Align[cute.struct.MemRange[a.element_type, cute.cosize(a_ring)], 1024]

        self.storage = Storage
        self.kernel(tma_a, gA, tma_b, gB, o, tiled_mma, a_ring, b_ring, nbytes).launch(
            grid=[1, 1, 1], block=[THREADS, 1, 1], stream=stream
        )

    @cute.kernel
    def kernel(
        self,
        tma_a: cute.CopyAtom,
        mA: cute.Tensor,
        tma_b: cute.CopyAtom,
        mB: cute.Tensor,
        mO: cute.Tensor,
        tiled_mma: cute.TiledMma,
        a_ring: cute.ComposedLayout,
        b_ring: cute.ComposedLayout,
        nbytes: cutlass.Constexpr,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        wg = warp // 4
        storage = cutlass.memory.SmemAllocator().allocate(self.storage)
        sA, sB = hop.smem_rings(storage, a_ring, b_ring)
        sP = storage.sP.get_tensor(a_ring.outer, swizzle=a_ring.inner)  # P as an A operand
        bar = storage.bars.data_ptr()
        gA = cute.local_tile(mA, (T, T), (0, None))
        gB = cute.local_tile(mB, (T, T), (0, None))
        tAsA, tAgA, tBsB, tBgB = hop.tma_partition_ab(tma_a, tma_b, sA, sB, gA, gB)
        if warp == 0:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        if warp == 0:  # one phase: arm the barrier with the bytes, then both copies
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive_and_expect_tx(bar, nbytes)
            cute.copy(tma_a, tAgA[(None, 0)], tAsA[(None, 0)], tma_bar_ptr=bar)
            cute.copy(tma_b, tBgB[(None, 0)], tBsB[(None, 0)], tma_bar_ptr=bar)

        wg_tidx = tidx % WG
        gO = cute.local_tile(mO, (T, T), (0, 0))
        tCrA, tCrB, tCgO, acc = hop.mma_operands(tiled_mma, wg_tidx, sA, sB, gO)
        if wg == 0:
            tPsP = tiled_mma.get_slice(wg_tidx).partition_C(sP[None, None, 0])
            leader(bar, tiled_mma, tCrA, tCrB, acc, tPsP)
        else:
            tCrP = tiled_mma.make_fragment_A(tiled_mma.get_slice(wg_tidx).partition_A(sP))
            follower(bar, tiled_mma, tCrP, tCrB, acc, self.rewait)
            tCgO.store(acc.load())


def _try_waits(rewait: bool, args) -> int:
    """Compile one build with its PTX kept in a scratch folder; its mbarrier try-wait sites."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        compiled = cute.compile(Handoff(rewait), *args, options=f"--keep-ptx --dump-dir {tmp}")
        return compiled.__ptx__.count("mbarrier.try_wait")


def compile_snippet():
    """CPU: compile both builds for SM (CUTE_DSL_ARCH) with fake tensors."""
    from cutlass.cute.runtime import make_fake_stream

    args = [hop.fake_matrix(cutlass.Float16, T, T) for _ in range(2)]
    args += [hop.fake_matrix(cutlass.Float32, T, T), make_fake_stream()]
    with_rewait, without = _try_waits(True, args), _try_waits(False, args)
    assert without < with_rewait, (with_rewait, without)
    return f"B read by two warpgroups; PTX try-waits: {with_rewait} with re-wait, {without} without"


def check():
    """GPU: O of both builds against torch fp16(A B^T) B^T."""
    import torch
    from cutlass.torch import current_stream

    torch.manual_seed(0)
    a = torch.randn(T, T, device="cuda", dtype=torch.float16)
    b = torch.randn(T, T, device="cuda", dtype=torch.float16)
    p = (a.float() @ b.float().t()).half().float()
    ref = p @ b.float().t()
    errs = []
    for rw in (True, False):
        o = torch.full((T, T), float("nan"), device="cuda", dtype=torch.float32)
        args = [hop.cute_view(t) for t in (a, b, o)]
        stream = current_stream()
        cute.compile(Handoff(rw), *args, stream)(*args, stream)
        torch.cuda.synchronize()
        err = (o - ref).abs().max().item()
        assert err < 0.05, f"rewait={rw}: max abs error {err}"
        errs.append(err)
    return f"O 64x64 with / without the re-wait, max abs error {errs[0]:.3g} / {errs[1]:.3g}"
