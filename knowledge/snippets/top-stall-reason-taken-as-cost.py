"""Keep or drop a change on alternated medians, never on the stall reason that suggested it
(host code, runs anywhere). The numbers are our MLA decode's step 4 -> step 5 medians (us)
from one alternated H200 run (results/logs/2026-12-01-h200-mla-sm90-steps/steps-table/table.log).

Shown in knowledge/anti-patterns/top-stall-reason-taken-as-cost.md.
"""

SM = "generic"


# snippet:begin
def verdict(before: dict, after: dict, noise: float = 0.01) -> str:
    """before/after: median time per setting, both builds timed in ONE alternated run.
    'keep' only if no setting got slower beyond noise and some got faster beyond it."""
    change = {k: after[k] / before[k] - 1.0 for k in before}
    if any(c > noise for c in change.values()):
        return "drop"
    return "keep" if any(c < -noise for c in change.values()) else "neutral"


# Step 5 was built because ncu's top stall after `wait` was long_scoreboard (the page-table
# reads on the TMA issue path). The stall reason is the hypothesis; this is the test.
STEP4 = {"32x4096": 86.8, "128x4096": 322.1, "128x16384": 1249.7, "s2": 153.6, "varlen": 149.2}
STEP5 = {"32x4096": 86.6, "128x4096": 328.7, "128x16384": 1286.7, "s2": 158.1, "varlen": 149.2}
assert verdict(STEP4, STEP5) == "drop"  # slower by 2-3% where it matters: refuted
# snippet:end


def compile_snippet():
    """The rule on the recorded medians (and on a made-up clear win, for contrast)."""
    assert verdict(STEP4, STEP5) == "drop"
    assert verdict(STEP4, {k: v * 0.95 for k, v in STEP4.items()}) == "keep"
    assert verdict(STEP4, STEP4) == "neutral"
    return "step 5: drop"


def check():
    """No GPU needed: the same assertions."""
    return compile_snippet()
