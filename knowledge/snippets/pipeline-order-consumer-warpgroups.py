"""Ordering two consumer warpgroups with `pipeline.PipelineOrder` and per-warpgroup named
barriers (sm_90a).

One CTA, two consumer warpgroups; warpgroup w computes rows [64 w, 64 w + 64) of
C (128, 64) fp32 = A (128, 128) bf16 @ B (64, 128)^T with WGMMA, both operands already in SMEM.
A PipelineOrder token (depth 1, length 2) orders two points of each warpgroup's tile: the
issue of its first K tile (WG0 first, then WG1), and its epilogue (WG0's, then WG1's). The two
epilogues share ONE SMEM staging buffer: only the order keeps them from overwriting each
other. Inside an epilogue, named barriers (ids 1 and 2, never 0) synchronise the 128 threads
of one warpgroup only. check() compares C with torch.

Shown in knowledge/languages/cute-dsl/optimizations/pipeline-order-consumer-warpgroups.md.
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import OperandMajorMode, warpgroup
from cutlass.tensor_utils import LayoutEnum

from kernelplan.kb.snippets import sibling

tile = sibling(__file__, "_hopper_tile")

SM = "sm_90a"
EXPECT = "pass"
TIMEOUT_S = 120

NUM_WG, WG = 2, 128
M, N, K, BK = 64 * NUM_WG, 64, 128, 64  # K: two K tiles, the first one issued under the order


# snippet:begin
def make_order(storage_ptr, consumer_wg, num_consumer_wgs: int = 2):
    # consumer_wg: 0 for the first consumer warpgroup, 1 for the second, ...
    return pipeline.PipelineOrder.create(
        barrier_storage=storage_ptr,  # num_consumer_wgs Int64 slots in the shared struct
        depth=1,
        length=num_consumer_wgs,
        group_id=consumer_wg,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, WG),
        defer_sync=True,  # one fence + CTA barrier after all pipelines are created
    )


@cute.jit
def issue_k_tile(mma, acc, tCrA, tCrB, kt: cutlass.Constexpr, kblocks: cutlass.Constexpr):
    warpgroup.fence()
    for kb in cutlass.range_constexpr(kt * kblocks, (kt + 1) * kblocks):
        cute.gemm(mma, acc, tCrA[None, None, kb], tCrB[None, None, kb], acc)
        mma.set(warpgroup.Field.ACCUMULATE, True)
    warpgroup.commit_group()


@cute.jit
def consumer_tile(order, mma, acc, tCrA, tCrB, store_tile, wg_barrier_id):
    kblocks = BK // 16
    mma.set(warpgroup.Field.ACCUMULATE, False)
    order.wait()  # my turn to issue
    issue_k_tile(mma, acc, tCrA, tCrB, 0, kblocks)  # fence, gemm k-blocks, commit_group
    order.arrive()  # the other warpgroup may issue its first MMA now
    for kt in cutlass.range_constexpr(1, K // BK):  # no ordering inside the loop
        issue_k_tile(mma, acc, tCrA, tCrB, kt, kblocks)
    warpgroup.wait_group(0)
    order.wait()  # my turn for the epilogue
    store_tile(acc, wg_barrier_id)
    order.arrive()


# snippet:end


@cute.jit
def two_consumers(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream):
    dt = a.element_type
    mma = sm90_utils.make_trivial_tiled_mma(
        dt, dt, OperandMajorMode.K, OperandMajorMode.K, cutlass.Float32, (1, 1, 1), (64, N)
    )
    a_l = sm90_utils.make_smem_layout_a(LayoutEnum.ROW_MAJOR, (M, N, K), dt, 1)
    b_l = sm90_utils.make_smem_layout_b(LayoutEnum.ROW_MAJOR, (M, N, K), dt, 1)

    @cute.struct
    class Storage:
        order_bars: cute.struct.MemRange[cutlass.Int64, NUM_WG]
        sC: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, 64 * N], 128]  # ONE buffer
        sA: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(a_l)], 1024]
        sB: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(b_l)], 1024]

    order_kernel(a, b, c, mma, a_l, b_l, Storage).launch(
        grid=[1, 1, 1], block=[WG * NUM_WG, 1, 1], stream=stream
    )


@cute.kernel
def order_kernel(
    mA: cute.Tensor,
    mB: cute.Tensor,
    mC: cute.Tensor,
    mma: cute.TiledMma,
    a_l: cute.ComposedLayout,
    b_l: cute.ComposedLayout,
    storage_t: cutlass.Constexpr,
):
    tidx, _, _ = cute.arch.thread_idx()
    wg = cute.arch.make_warp_uniform(tidx // WG)
    wg_tidx = tidx % WG
    storage = cutlass.memory.SmemAllocator().allocate(storage_t)
    sA = storage.sA.get_tensor(a_l.outer, swizzle=a_l.inner)[None, None, 0]  # (M, K)
    sB = storage.sB.get_tensor(b_l.outer, swizzle=b_l.inner)[None, None, 0]  # (N, K)
    sC = storage.sC.get_tensor(cute.make_layout((64, N), stride=(N, 1)))
    order = make_order(storage.order_bars.data_ptr(), wg, NUM_WG)
    tile.copy_tile_g2s(mA, sA, tidx, WG * NUM_WG)
    tile.copy_tile_g2s(mB, sB, tidx, WG * NUM_WG)
    cute.arch.mbarrier_init_fence()  # the deferred sync of make_order, shared with the loads
    cute.arch.fence_proxy("async.shared", space="cta")
    cute.arch.sync_threads()

    sA_wg = cute.local_tile(sA, (64, K), (wg, 0))
    gC_wg = cute.local_tile(mC, (64, N), (wg, 0))
    thr = mma.get_slice(wg_tidx)
    tCrA = mma.make_fragment_A(thr.partition_A(sA_wg))
    tCrB = mma.make_fragment_B(thr.partition_B(sB))
    acc = thr.make_fragment_C(thr.partition_shape_C((64, N)))
    tCsC = thr.partition_C(sC)
    tCgC = thr.partition_C(gC_wg)

    def store_tile(acc, wg_barrier_id):
        tCsC.store(acc.load())  # registers -> the shared staging buffer
        pipeline.arrive_and_wait(barrier_id=wg_barrier_id, num_threads=WG)  # this WG only
        tCgC.store(tCsC.load())  # SMEM -> global (a TMA store in a real epilogue)
        pipeline.arrive_and_wait(barrier_id=wg_barrier_id, num_threads=WG)  # buffer free

    consumer_tile(order, mma, acc, tCrA, tCrB, store_tile, 1 + wg)


def _compile(a, b, c, stream):
    return cute.compile(two_consumers, a, b, c, stream)


def compile_snippet():
    """CPU: compile for SM (CUTE_DSL_ARCH) with fake tensors."""
    from cutlass.cute.runtime import make_fake_stream

    bf = cutlass.BFloat16
    a, b = tile.fake_matrix(bf, M, K), tile.fake_matrix(bf, N, K)
    _compile(a, b, tile.fake_matrix(cutlass.Float32, M, N), make_fake_stream())
    return "two consumer warpgroups ordered by PipelineOrder, one shared epilogue buffer"


def check():
    """H200: both warpgroups' tiles correct although their epilogues share one buffer."""
    import torch
    from cutlass.torch import current_stream

    torch.manual_seed(0)
    a = torch.randn(M, K, device="cuda").bfloat16()
    b = torch.randn(N, K, device="cuda").bfloat16()
    c = torch.full((M, N), float("nan"), device="cuda")
    args = [tile.cute_view(t) for t in (a, b, c)]
    stream = current_stream()
    _compile(*args, stream)(*args, stream)
    torch.cuda.synchronize()
    ref = a.float() @ b.float().t()
    err = (c - ref).abs().max().item()
    assert torch.isfinite(c).all() and err < 1e-2 * K**0.5, f"max abs error {err}"
    return f"two ordered consumer warpgroups, max abs error {err:.3g}"
