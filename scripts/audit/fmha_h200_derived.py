"""Audit of knowledge/kernels/fmha.md section (d), the H200 table and Nsight Compute rows added
2026-12-01: recomputes from the committed records the derived figures the section states (ratio
to the fastest peer per setting and which peer, sdpa_efficient / sdpa_flash ranges, hopper_fmha
against the Ampere kernel, TFLOP/s kept from D 128 to D 64, SM-cycle and tensor-pipe ratios,
ncu duration against the alternated median).

    python scripts/audit/fmha_h200_derived.py > knowledge/audit/checks/kernels-fmha.derived.txt
"""

import collections
import glob
import json
from pathlib import Path

recs = collections.defaultdict(dict)
for f in glob.glob("results/fmha/*/2026-12-01T05-3*benchmark*.json"):
    x = json.loads(Path(f).read_text())
    p = x["problem"]
    key = (p["d_qk"], p["sq"], p["b"], p["causal"])
    recs[key][f.split("/")[2]] = (
        x["timing"]["median_us"],
        x["roofline"]["tflops"],
        x.get("round_id"),
    )
for k in sorted(recs):
    r = recs[k]
    peers = {i: v for i, v in r.items() if i != "hopper-fmha"}
    best = min(peers, key=lambda i: peers[i][0])
    h = r["hopper-fmha"][0]
    print(
        k,
        "ratio %.3f" % (h / peers[best][0]),
        best,
        "eff %.2f" % (r["sdpa-efficient"][0] / peers[best][0]),
        "flash %.2f" % (r["sdpa-flash"][0] / peers[best][0]),
        "hop/amp %.3f" % (h / r["ampere-flash-attention-v2"][0]),
        len(r),
        {v[2] for v in r.values()},
    )
k = (128, 4096, 4, False)
k6 = (64, 4096, 4, False)
for i in ["hopper-fmha", "flash-attn4", "sdpa-cudnn"]:
    print(i, recs[k][i][1], recs[k6][i][1], "%.3f" % (recs[k6][i][1] / recs[k][i][1]))
print("sdpa-flash tflops", recs[k]["sdpa-flash"][1])
n = {}
for f in glob.glob("results/fmha/*/2026-12-01T05-4*ncu*.json"):
    x = json.loads(Path(f).read_text())
    m = x["ncu"]["metrics"]
    n[f.split("/")[2]] = (x["ncu"]["duration_us"], m.get("sm_clock_mhz"), m["tensor_pipe_pct"])
print(n)
h = n["hopper-fmha"]
for i in ["flash-attn4", "sdpa-cudnn"]:
    o = n[i]
    print(
        i,
        "cycles ratio %.4f" % ((h[0] * h[1]) / (o[0] * o[1])),
        "tc ratio %.4f" % (o[2] / h[2]),
        "ncu/median %.4f" % (o[0] / recs[k][i][0]),
    )
print("hop ncu/median %.4f" % (h[0] / recs[k]["hopper-fmha"][0]))
