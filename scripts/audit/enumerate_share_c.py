"""Share C: enumerations over the pinned CUTLASS tree that back the universal claims of the
entries first committed on 2026-12-01 (MLA/FMHA reading notes). Each query prints its matches
(git grep at the pin), so the claim can be regenerated; `--check` compares with the committed
output knowledge/audit/checks/share-c-enumerations.txt.

    python scripts/audit/enumerate_share_c.py [--check]
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CUTLASS = ROOT / "third_party" / "cutlass"
PIN = "7107b05535f8977f5ecb9d01ee203205b1fd9bc4"
EX = "examples/python/CuTeDSL/cute/blackwell/kernel/attention"
OUT = ROOT / "knowledge" / "audit" / "checks" / "share-c-enumerations.txt"

# (name, claim, git-grep pattern, files)
QUERIES = [
    (
        "mla-scheduler-per-role",
        "mla_helpers: in both MLA kernels every role creates its own scheduler (5 roles each: "
        "page-table or K/V TMA warps, MMA, softmax, correction; "
        "the empty warps only lower registers)",
        r"create_mla_static_tile_scheduler(",
        [f"{EX}/mla/mla_decode_fp16.py", f"{EX}/mla/mla_decode_fp8.py"],
    ),
    (
        "mla-fp8-no-cp-async",
        "mla_decode_fp8: no PipelineCpAsync and no page-table ring (expect no match)",
        r"PipelineCpAsync\|load_pt_stage\|cp_async",
        [f"{EX}/mla/mla_decode_fp8.py"],
    ),
    (
        "fmha-bwd-accumulate-false",
        "fmha_bwd: ACCUMULATE set False only on the S, dP and dQ MMAs (KQ, VdO, dSK); "
        "the dV (PdO) and dK (dSQ) MMAs are only ever set True",
        r"tiled_mma.set(tcgen05.Field.ACCUMULATE",
        [f"{EX}/fmha/fmha_bwd.py"],
    ),
    (
        "mixed-decode-setmaxregister-guard",
        "mixed_input_fmha_decode: every setmaxregister call sits under use_reg_reconfig "
        "(= grouped_head_tile > 16)",
        r"use_reg_reconfig\|setmaxregister",
        [f"{EX}/mixed_input_fmha/mixed_input_fmha_decode.py"],
    ),
    (
        "hopper-fmha-cluster",
        "hopper fmha: the cluster is always (1, 1) (the multicast branch is never taken)",
        r"cluster_shape_mn =",
        ["examples/python/CuTeDSL/cute/hopper/kernel/attention/fmha.py"],
    ),
]


def run() -> str:
    out = [f"# share C enumerations at CUTLASS {PIN[:9]} (scripts/audit/enumerate_share_c.py)", ""]
    for name, claim, pat, files in QUERIES:
        r = subprocess.run(
            ["git", "-C", str(CUTLASS), "grep", "-n", pat, PIN, "--", *files],
            capture_output=True,
            text=True,
        )
        hits = [h.split(":", 1)[1] for h in r.stdout.splitlines()]
        out += [f"## {name}: {len(hits)} matches", f"claim: {claim}", *[f"  {h}" for h in hits], ""]
    return "\n".join(out)


def main() -> int:
    text = run()
    if "--check" in sys.argv:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == text
        print("unchanged" if same else "DRIFT")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
