"""A register tensor made with a default (column-major) layout splits each 16-byte global load
into one load per element (four 4-byte ones for fp32) when a thread copies into one of its
rows with ``cute.autovec_copy``.

Each thread of a warp merges NB pieces: for piece u it copies 4 contiguous fp32 (16 bytes,
16-byte aligned) from global memory into row u of a register tensor, then adds the rows. With
``cute.make_layout((NB, 4))`` the 4 columns of a row sit NB registers apart (stride (1, NB)), the
copy has no contiguous destination, and ``cute.autovec_copy`` issues 4-byte loads. With the
4 columns contiguous (stride (4, 1)) each row is one 16-byte load. compile_snippet() compiles
both for sm_90a on the CPU (fake tensors) and counts ``LDG.E`` and ``LDG.E.128`` in each
cubin's SASS. check() runs both on the GPU against torch.

The MLA decode's combine kernel (``packages/mla/src/cute_mla/mla_decode_sm90/kernel.py``,
``merge_row``) has this shape since seesaw step 8; step 36 gives its tile contiguous rows (the
defaults still build the column-major one until 36 is timed).

Shown in knowledge/languages/cute-dsl/anti-patterns/
column-major-register-tile-splits-vector-loads.md.
"""

import re

import cutlass
import cutlass.cute as cute

SM = "sm_90a"
EXPECT = "pass"
TIMEOUT_S = 120

NB = 4  # pieces merged per thread
THREADS = 32


# snippet:begin
@cute.kernel
def merge_kernel(src: cute.Tensor, out: cute.Tensor, contiguous: cutlass.Constexpr):
    # src: (NB, threads, 4) fp32, each thread's 4 columns contiguous; out: (threads, 4)
    tidx, _, _ = cute.arch.thread_idx()
    if cutlass.const_expr(contiguous):
        layout = cute.make_layout((NB, 4), stride=(4, 1))  # a row's 4 columns adjacent
    else:
        layout = cute.make_layout((NB, 4))  # column-major: a row's columns NB apart
    parts = cute.make_rmem_tensor(layout, cutlass.Float32)
    for u in cutlass.range_constexpr(NB):
        cute.autovec_copy(src[u, tidx, None], parts[u, None])  # 16 contiguous bytes each
    acc = cute.make_rmem_tensor(cute.make_layout((4,)), cutlass.Float32)
    acc.fill(0.0)
    for u in cutlass.range_constexpr(NB):
        for v in cutlass.range_constexpr(4):
            acc[v] = acc[v] + parts[u, v]
    cute.autovec_copy(acc, out[tidx, None])


# snippet:end


@cute.jit
def merge(src: cute.Tensor, out: cute.Tensor, contiguous: cutlass.Constexpr, stream):
    merge_kernel(src, out, contiguous).launch(grid=[1, 1, 1], block=[THREADS, 1, 1], stream=stream)


def load_widths(contiguous: bool) -> dict[str, int]:
    """Compile for sm_90a on the CPU and count the global loads of each width in the SASS."""
    import tempfile

    from cutlass.cute.runtime import make_fake_stream, make_fake_tensor

    from kernelplan import static

    src = make_fake_tensor(
        cutlass.Float32, (NB, THREADS, 4), (THREADS * 4, 4, 1), assumed_align=16
    )  # fmt: skip
    out = make_fake_tensor(cutlass.Float32, (THREADS, 4), (4, 1), assumed_align=16)
    with tempfile.TemporaryDirectory() as tmp:
        art = static.compile_to_cubin(
            merge, (src, out, contiguous, make_fake_stream()), arch=SM, dump_dir=tmp,
            ptxas_info=False,
        )  # fmt: skip
        sass = static._run_tool("cuobjdump", "-sass", art.cubin_path)
    return {w: len(re.findall(rf"\bLDG\.E{re.escape(w)}(?![.\w])", sass)) for w in ("", ".128")}


def compile_snippet():
    col, row = load_widths(False), load_widths(True)
    assert col == {"": 4 * NB, ".128": 0}, col
    assert row == {"": 0, ".128": NB}, row
    return (
        f"column-major (NB, 4): {col['']} LDG.E, {col['.128']} LDG.E.128; "
        f"rows contiguous: {row['']} LDG.E, {row['.128']} LDG.E.128"
    )


def check():
    import torch
    from cutlass.cute.runtime import from_dlpack
    from cutlass.torch import current_stream

    src = torch.randn(NB, THREADS, 4, device="cuda")
    want = src.sum(0)
    for contiguous in (False, True):
        out = torch.full((THREADS, 4), float("nan"), device="cuda")
        args = (from_dlpack(src, assumed_align=16), from_dlpack(out, assumed_align=16))
        stream = current_stream()
        f = cute.compile(merge, *args, contiguous, stream)
        f(*args, stream)
        torch.cuda.synchronize()
        err = (out - want).abs().max().item()
        assert err < 1e-5, (contiguous, err)
    return compile_snippet() + "; both sum the pieces as torch does on the GPU"
