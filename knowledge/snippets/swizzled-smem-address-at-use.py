"""Loads from a 128-byte-swizzled SMEM tile addressed where they are used (sm_90a, one
warpgroup): each thread keeps a base offset and a swizzle phase, each load adds one XOR and an
immediate. The swizzled cute view leaves ptxas one precomputed address per (row, column
block), which a register-heavy kernel spills.

One stage of a two-stage ring of (64 rows, 128 bytes) Uint8 tiles is filled from global
memory. The layout is the K_SW128 atom of an 8-bit type tiled down the rows. Each thread then
gathers 16 vectors of 8 bytes twice. The first pass goes through the swizzled view
(`cute.local_tile` + `cute.autovec_copy`) into out_view. The second adds offsets computed at
use to the tile's raw SMEM pointer and writes out_direct. Eight vectors follow the K pattern
of our FP8 MLA decode: rows r0 and r0 + 8, the quad lane's 8 bytes of each 32-byte column
block. The other eight follow its V pattern: one 8-byte column, tokens t0 + 2 qd + e + 8 m.
compile_snippet() first checks the ring's layout and the offset helpers (for every thread, in
plain integers) against the swizzle's definition on the host, then compiles the kernel.
check() compares both outputs with the bytes gathered on the host from the unswizzled input.

Shown in knowledge/languages/cute-dsl/optimizations/swizzled-smem-address-at-use.md.
"""

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import warpgroup

from kernelplan.kb.snippets import sibling

tile = sibling(__file__, "_hopper_tile")

SM = "sm_90a"
EXPECT = "pass"
TIMEOUT_S = 120

ROWS, ROW_BYTES = 64, 128  # one K_SW128 box of an 8-bit type: 8 atoms of 8 x 128 bytes
TILE_BYTES = ROWS * ROW_BYTES
STAGES, STAGE = 2, 1  # the tile lands in stage 1, so the stage offset is exercised
THREADS = 128  # one warpgroup
NVEC = 16  # 8-byte vectors per thread: 8 of the K pattern, 8 of the V pattern


# snippet:begin
# K_SW128 for 8-bit elements, tiled down the rows: row r's 128 bytes start at 128 r and the
# swizzle XORs byte-offset bits 4-6 (the 16-byte chunk) with bits 7-9 (r % 8):
#     byte(r, c) = 128 r + (c ^ (16 (r % 8)))
# Rows r and r + 8 (a stage, a box: whole 1024-byte atoms) differ by an immediate only.


def k_base_phase(stage, r0, qd):
    """Once per thread (outside the loop): base and phase of quad lane qd's 8 bytes
    32 kb + 8 qd of row r0. Their chunk 2 kb + qd // 2 has an even part, which only the
    phase's bits 1-2 change (the XOR at use), and a low bit, which only bit 0 changes
    (resolved here, into the base)."""
    ph = r0 % 8
    base = stage * TILE_BYTES + r0 * ROW_BYTES + 16 * ((qd // 2) ^ (ph % 2)) + 8 * (qd % 2)
    return base, 16 * (ph - ph % 2)  # phase = 16 (r0 % 8 & 6)


def k_offset(base_phase, hh: int, kb: int):
    """Row r0 + 8 hh, 32-byte column block kb: one XOR, the rest the load's immediate."""
    base, phase = base_phase
    return base + ((32 * kb) ^ phase) + hh * 8 * ROW_BYTES


def v_offsets(stage, qd, vec, t0):
    """Once per thread: bytes 8 vec .. 8 vec + 7 of rows t0 + 2 qd and t0 + 2 qd + 1 (t0 a
    multiple of 8). Every row t0 + 2 qd + e + 8 m has the phase of one of the two."""
    offs = []
    for e in range(2):
        row = t0 + 2 * qd + e
        offs.append(stage * TILE_BYTES + row * ROW_BYTES + ((8 * vec) ^ (16 * (row % 8))))
    return offs


def v_offset(offs, m: int, e: int):
    """Row t0 + 2 qd + e + 8 m: one of the two offsets plus an immediate."""
    return offs[e] + 8 * m * ROW_BYTES


@cute.jit
def bytes_at(ptr: cute.Pointer, off):
    """The 8 bytes at byte offset `off` of the tile's raw SMEM pointer (1024-byte aligned) as
    a (1, 8) tensor; the assumption keeps the copy one LDS.64."""
    return cute.make_tensor(ptr + cute.assume(off, divby=8), cute.make_layout((1, 8)))


@cute.jit
def gather(sT: cute.Tensor, ptr: cute.Pointer, stage, tidx, out_view, out_direct):
    """Row tidx of out_*: the thread's 16 vectors through the swizzled view and at use."""
    lane = tidx % 32
    qd = lane % 4
    r0 = 16 * (tidx // 32) + lane // 4  # K pattern: rows r0, r0 + 8; blocks kb = 0..3
    vec = (tidx // 4) % 16  # V pattern: bytes 8 vec ..; rows t0 + 2 qd + e + 8 m
    t0 = 32 * (tidx // 64)
    kbp = k_base_phase(stage, r0, qd)  # a kernel: once per stage, before the MMA chain
    voffs = v_offsets(stage, qd, vec, t0)
    for i in cutlass.range_constexpr(NVEC):
        if cutlass.const_expr(i < 8):
            hh, kb = i // 4, i % 4
            row, vcol = r0 + 8 * hh, 4 * kb + qd  # vcol: the 8-byte column
            direct = bytes_at(ptr, k_offset(kbp, hh, kb))
        else:
            m, e = (i - 8) // 2, (i - 8) % 2
            row, vcol = t0 + 2 * qd + e + 8 * m, vec
            direct = bytes_at(ptr, v_offset(voffs, m, e))
        view = cute.local_tile(sT[None, None, stage], (1, 8), (row, vcol))  # swizzled view
        copy8(view, cute.local_tile(out_view, (1, 8), (tidx, i)))
        copy8(direct, cute.local_tile(out_direct, (1, 8), (tidx, i)))


# snippet:end


@cute.jit
def copy8(src: cute.Tensor, dst: cute.Tensor):
    """8 bytes from SMEM through registers to global memory."""
    r = cute.make_rmem_tensor(cute.make_layout((1, 8)), cutlass.Uint8)
    cute.autovec_copy(src, r)
    cute.autovec_copy(r, dst)


def ring_layout():
    """Inside @cute.jit: the (ROWS, ROW_BYTES, STAGES) ring of K_SW128 atoms of an 8-bit type,
    tiled down the rows, then the stages."""
    atom = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, cutlass.Uint8)
    return cute.tile_to_shape(atom, (ROWS, ROW_BYTES, STAGES), (0, 1, 2))


@cute.jit
def verify_ring_layout():
    """Trace time (no kernel): the ring's byte offset of every (row, byte, stage) equals
    sw128_byte, the definition the at-use offsets are built on."""
    ring = ring_layout()
    for s in cutlass.range_constexpr(STAGES):
        for r in cutlass.range_constexpr(ROWS):
            for c in cutlass.range_constexpr(ROW_BYTES):
                if cutlass.const_expr(ring((r, c, s)) != sw128_byte(s, r, c)):
                    raise AssertionError(f"K_SW128 ring: ({r}, {c}, {s}) -> {ring((r, c, s))}")


@cute.jit
def gather_twice(x: cute.Tensor, out_view: cute.Tensor, out_direct: cute.Tensor, stream):
    """x (ROWS, ROW_BYTES) uint8; out_view, out_direct (THREADS, 8 NVEC) uint8."""
    ring = ring_layout()

    @cute.struct
    class Storage:
        sT: cute.struct.Align[cute.struct.MemRange[cutlass.Uint8, cute.cosize(ring)], 1024]

    gather_kernel(x, out_view, out_direct, ring, Storage).launch(
        grid=[1, 1, 1], block=[THREADS, 1, 1], stream=stream
    )


@cute.kernel
def gather_kernel(
    mX: cute.Tensor,
    mOv: cute.Tensor,
    mOd: cute.Tensor,
    ring: cute.ComposedLayout,
    storage_t: cutlass.Constexpr,
):
    tidx, _, _ = cute.arch.thread_idx()
    storage = cutlass.memory.SmemAllocator().allocate(storage_t)
    sT = storage.sT.get_tensor(ring.outer, swizzle=ring.inner)  # (ROWS, ROW_BYTES, STAGES)
    ptr = storage.sT.data_ptr()  # the same bytes, unswizzled addressing
    tile.copy_tile_g2s(mX, sT[None, None, STAGE], tidx, THREADS)
    cute.arch.sync_threads()
    gather(sT, ptr, STAGE, tidx, mOv, mOd)


def _compile(x, out_view, out_direct, stream):
    return cute.compile(gather_twice, x, out_view, out_direct, stream)


def sw128_byte(stage: int, row: int, col: int) -> int:
    """The swizzle's definition: byte (row, col) of the stage's (64, 128) 8-bit K_SW128 box."""
    return stage * TILE_BYTES + row * ROW_BYTES + (col ^ (16 * (row % 8)))


def expected_coords(tidx: int):
    """(row, first byte) of thread tidx's NVEC vectors, in gather()'s order."""
    lane = tidx % 32
    qd, r0 = lane % 4, 16 * (tidx // 32) + lane // 4
    vec, t0 = (tidx // 4) % 16, 32 * (tidx // 64)
    k = [(r0 + 8 * (i // 4), 32 * (i % 4) + 8 * qd) for i in range(8)]
    v = [(t0 + 2 * qd + i % 2 + 8 * (i // 2), 8 * vec) for i in range(8)]
    return k + v


def check_offsets() -> int:
    """Host: the at-use offsets of every thread against sw128_byte; returns the count."""
    n = 0
    for tidx in range(THREADS):
        lane = tidx % 32
        qd, r0 = lane % 4, 16 * (tidx // 32) + lane // 4
        vec, t0 = (tidx // 4) % 16, 32 * (tidx // 64)
        kbp = k_base_phase(STAGE, r0, qd)
        voffs = v_offsets(STAGE, qd, vec, t0)
        got = [k_offset(kbp, i // 4, i % 4) for i in range(8)]
        got += [v_offset(voffs, i // 2, i % 2) for i in range(8)]
        for off, (row, col) in zip(got, expected_coords(tidx), strict=True):
            assert off == sw128_byte(STAGE, row, col) and off % 8 == 0, (tidx, row, col, off)
            n += 1
    covered = {rc for t in range(THREADS) for rc in expected_coords(t)[:8]}
    assert len(covered) == ROWS * ROW_BYTES // 8  # the K pattern reads the whole box once
    return n


def compile_snippet():
    """CPU: the ring's layout and the offset arithmetic against the swizzle's definition,
    then a compile for SM (CUTE_DSL_ARCH) with fake tensors."""
    from cutlass.cute.runtime import make_fake_stream

    cute.compile(verify_ring_layout)
    n = check_offsets()
    u8 = cutlass.Uint8
    _compile(
        tile.fake_matrix(u8, ROWS, ROW_BYTES),
        tile.fake_matrix(u8, THREADS, 8 * NVEC),
        tile.fake_matrix(u8, THREADS, 8 * NVEC),
        make_fake_stream(),
    )
    return f"ring layout = swizzle definition; {n} at-use offsets match it; kernel compiled"


def check():
    """H200: both gathers against the bytes taken on the host from the unswizzled input."""
    import torch
    from cutlass.torch import current_stream

    torch.manual_seed(0)
    x = torch.randint(0, 256, (ROWS, ROW_BYTES), dtype=torch.uint8)
    ref = torch.empty(THREADS, 8 * NVEC, dtype=torch.uint8)
    for tidx in range(THREADS):
        for i, (row, col) in enumerate(expected_coords(tidx)):
            ref[tidx, 8 * i : 8 * i + 8] = x[row, col : col + 8]
    out_view = torch.zeros(THREADS, 8 * NVEC, dtype=torch.uint8, device="cuda")
    out_direct = torch.zeros(THREADS, 8 * NVEC, dtype=torch.uint8, device="cuda")
    x_d = x.cuda()
    args = [tile.cute_view(t) for t in (x_d, out_view, out_direct)]
    stream = current_stream()
    _compile(*args, stream)(*args, stream)
    torch.cuda.synchronize()
    bad_view = int((out_view.cpu() != ref).sum())
    bad_direct = int((out_direct.cpu() != ref).sum())
    assert bad_view == 0 and bad_direct == 0, f"bytes wrong: view {bad_view}, at use {bad_direct}"
    return f"{THREADS} threads x {NVEC} vectors: swizzled view and at-use offsets bit-exact"
