"""e4m3 -> bf16 without conversion instructions: place the bits, multiply twice.

Each thread takes one 16-byte vector (16 e4m3 values of one row) and writes 16 bf16 values:
per 32-bit word of four e4m3 bytes, `prmt` moves bytes (0, 1) or (2, 3) to bits 8-15 and
24-31, the sign stays at bit 15 of each half, the 7 exponent-and-mantissa bits shift right by
4 into the bf16 exponent field: the half is the e4m3 value times 2^-120 (subnormals too). One
`mul.rn.bf16x2` by 2^120 restores it exactly, a second applies the row's power-of-two scale.
check() compares every finite code and a random matrix with torch's e4m3 -> fp32 -> bf16.

Shown in knowledge/languages/cute-dsl/optimizations/fp8-bit-placement-dequant.md.
"""

import cutlass
import cutlass.cute as cute
from cutlass._mlir.dialects import llvm
from cutlass.cutlass_dsl import T, dsl_user_op

SM = "sm_90a"
EXPECT = "pass"
TIMEOUT_S = 120

VEC = 16  # e4m3 values per thread (one 16-byte load)


# snippet:begin
@dsl_user_op
def scale_pair(sc, *, loc=None, ip=None) -> cutlass.Uint32:
    """An fp32 scale as two equal bf16 values (exact for powers of two)."""
    v = cutlass.Float32(sc).ir_value(loc=loc, ip=ip)
    return cutlass.Uint32(
        llvm.inline_asm(
            T.i32(),
            [v, v],
            "cvt.rn.bf16x2.f32 $0, $1, $2;",
            "=r,f,f",
            has_side_effects=False,
            is_align_stack=False,
            asm_dialect=llvm.AsmDialect.AD_ATT,
        )  # fmt: skip
    )


@dsl_user_op
def e4m3_pair_to_bf16x2(word, sc2, high: bool, *, loc=None, ip=None) -> cutlass.Uint32:
    """Bytes 0-1 (``high``: 2-3) of ``word`` as a bf16 pair, times the pair ``sc2``."""
    sel = 0x3424 if high else 0x1404  # each byte to bits 8-15 of its half, zeros elsewhere
    asm = (
        "{\n\t.reg .b32 y, s, t, k;\n\t"
        f"prmt.b32 y, $1, 0, {sel:#x};\n\t"
        "and.b32 s, y, 0x80008000;\n\t"  # the signs stay
        "shr.b32 t, y, 4;\n\t"
        "and.b32 t, t, 0x07F007F0;\n\t"  # exponent + mantissa into bf16's fields
        "or.b32 y, s, t;\n\t"  # = value * 2^-120
        "mov.b32 k, 0x7B807B80;\n\t"  # (2^120, 2^120) in bf16
        "mul.rn.bf16x2 y, y, k;\n\t"
        "mul.rn.bf16x2 $0, y, $2;\n\t}"
    )
    args = [
        cutlass.Uint32(word).ir_value(loc=loc, ip=ip),
        cutlass.Uint32(sc2).ir_value(loc=loc, ip=ip),
    ]
    return cutlass.Uint32(
        llvm.inline_asm(
            T.i32(),
            args,
            asm,
            "=r,r,r",
            has_side_effects=False,
            is_align_stack=False,
            asm_dialect=llvm.AsmDialect.AD_ATT,
        )  # fmt: skip
    )


@cute.kernel
def dequant_kernel(g_q: cute.Tensor, g_scale: cute.Tensor, g_out: cute.Tensor):
    """g_q (rows, cols) e4m3, g_scale (rows,) fp32, g_out (rows, cols) bf16; one thread per
    16-value vector of a row."""
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    per_row = g_q.shape[1] // VEC
    row = bidx * (cute.arch.block_dim()[0] // per_row) + tidx // per_row
    vec = tidx % per_row
    if row < g_q.shape[0]:
        r8 = cute.make_rmem_tensor(cute.make_layout((VEC,)), cutlass.Float8E4M3FN)
        cute.autovec_copy(cute.local_tile(g_q[row, None], (VEC,), (vec,)), r8)
        words = cute.recast_tensor(r8, cutlass.Uint32)  # 4 words of 4 values
        out = cute.make_rmem_tensor(cute.make_layout((VEC,)), cutlass.BFloat16)
        out32 = cute.recast_tensor(out, cutlass.Uint32)  # 8 words of 2 values
        sc2 = scale_pair(g_scale[row])
        for i in cutlass.range_constexpr(VEC // 4):
            out32[2 * i] = e4m3_pair_to_bf16x2(words[i], sc2, False)
            out32[2 * i + 1] = e4m3_pair_to_bf16x2(words[i], sc2, True)
        cute.autovec_copy(out, cute.local_tile(g_out[row, None], (VEC,), (vec,)))


# snippet:end


@cute.jit
def dequant(q: cute.Tensor, scale: cute.Tensor, out: cute.Tensor, rows_per_cta: cutlass.Constexpr):
    per_row = q.shape[1] // VEC
    grid = (q.shape[0] + rows_per_cta - 1) // rows_per_cta
    dequant_kernel(q, scale, out).launch(grid=[grid, 1, 1], block=[rows_per_cta * per_row, 1, 1])


def _fake(cols=512, rows_per_cta=4):
    from cutlass.cute.runtime import make_fake_tensor

    n = cute.sym_int()
    q = make_fake_tensor(cutlass.Float8E4M3FN, (n, cols), (cols, 1), assumed_align=16)
    s = make_fake_tensor(cutlass.Float32, (n,), (1,), assumed_align=16)
    o = make_fake_tensor(cutlass.BFloat16, (n, cols), (cols, 1), assumed_align=16)
    return q, s, o, rows_per_cta


def compile_snippet():
    """CPU: compile for SM with fake tensors (512 columns, 4 rows per CTA)."""
    cute.compile(dequant, *_fake())
    return "e4m3 -> bf16 by bit placement compiled (prmt + 2 x mul.rn.bf16x2 per pair)"


def check(rows=1024, cols=512):
    """H200: every finite e4m3 code (at scale 1) and a random matrix with power-of-two row
    scales, bit-exact against torch's conversion."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    torch.manual_seed(0)
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    codes = codes[~torch.isnan(codes.view(torch.float8_e4m3fn).float())]
    first = codes.repeat(cols // codes.numel() + 1)[:cols]  # row 0: every finite code
    x = torch.randn(rows, cols) * 50
    q8 = x.clamp(-448, 448).to(torch.float8_e4m3fn)
    q8[0] = first.view(torch.float8_e4m3fn)
    scale = torch.pow(2.0, torch.randint(-8, 8, (rows,)).float())
    scale[0] = 1.0
    ref = (q8.float() * scale[:, None]).to(torch.bfloat16)
    q_d, s_d = q8.cuda(), scale.cuda()
    out = torch.empty(rows, cols, dtype=torch.bfloat16, device="cuda")
    args = [from_dlpack(t, assumed_align=16) for t in (q_d, s_d, out)]
    f = cute.compile(dequant, *args, 4)
    f(*args)
    torch.cuda.synchronize()
    bad = int((out.cpu().view(torch.int16) != ref.view(torch.int16)).sum())
    assert bad == 0, f"{bad} values differ"
    return f"{rows}x{cols} e4m3 (every finite code in row 0) bit-exact in bf16"
