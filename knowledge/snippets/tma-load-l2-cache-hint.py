"""An L2 eviction hint on TMA loads (sm_90a): cute.copy(tma_atom, ..., cache_policy=Int64(...)).

The serial TMA GEMM of _serial_tma_gemm.py (C = A @ B^T, one warpgroup, one slot) whose loads
carry a 64-bit L2 cache policy: B, the operand this sketch treats as streamed, is loaded
evict-first; A, the one it treats as re-read by other CTAs, evict-last. The policy values are
CUTLASS's CacheHintSm90 (include/cute/arch/copy_sm90_desc.hpp:L186-L190 at 7107b0553). The
hint changes where the lines sit in L2, never the values: check() compares C with torch.

Shown in knowledge/languages/cute-dsl/optimizations/tma-load-l2-cache-hint.md.
"""

import cutlass
import cutlass.cute as cute

from kernelplan.kb.snippets import sibling

hop = sibling(__file__, "_hopper_tile")
serial = sibling(__file__, "_serial_tma_gemm")

SM = "sm_90a"
EXPECT = "pass"
TIMEOUT_S = 120

# snippet:begin
# The 64-bit L2 cache policies a TMA load accepts (CUTLASS CacheHintSm90).
EVICT_NORMAL = 0x1000000000000000
EVICT_FIRST = 0x12F0000000000000  # read once: leave L2 first
EVICT_LAST = 0x14F0000000000000  # read again soon by other CTAs: keep


class HintedLoadsGemm(serial.SerialTmaGemm):
    """Python ints at trace time; None means no hint (the plain TMA load)."""

    POLICY_A = EVICT_LAST
    POLICY_B = EVICT_FIRST

    @cute.jit
    def load_k(self, g, k, tAgA, tAsA, tBgB, tBsB, bar):
        # The keyword must be spelled cache_policy and the value must be an Int64:
        # a Python int raises, a misspelt keyword is silently dropped (no hint at all).
        if cutlass.const_expr(self.POLICY_A is None):
            cute.copy(g.tma_a, tAgA[(None, k)], tAsA[(None, 0)], tma_bar_ptr=bar)
        else:
            cute.copy(
                g.tma_a, tAgA[(None, k)], tAsA[(None, 0)], tma_bar_ptr=bar,
                cache_policy=cutlass.Int64(self.POLICY_A),
            )  # fmt: skip
        if cutlass.const_expr(self.POLICY_B is None):
            cute.copy(g.tma_b, tBgB[(None, k)], tBsB[(None, 0)], tma_bar_ptr=bar)
        else:
            cute.copy(
                g.tma_b, tBgB[(None, k)], tBsB[(None, 0)], tma_bar_ptr=bar,
                cache_policy=cutlass.Int64(self.POLICY_B),
            )  # fmt: skip


# snippet:end


def compile_snippet():
    """CPU: compile for SM (CUTE_DSL_ARCH) with fake tensors."""
    cute.compile(HintedLoadsGemm(), *hop.fake_gemm_args())
    return "TMA loads of A evict-last, of B evict-first"


def check(m=128, n=128, k=1024):
    """H200: 16 K tiles with hinted loads; the values must not change."""
    err = hop.check_gemm(HintedLoadsGemm(), m, n, k)
    return f"{k // 64} K tiles, A evict-last, B evict-first, max abs error {err:.3g}"
