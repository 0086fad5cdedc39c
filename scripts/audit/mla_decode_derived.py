"""Share C: recompute the derived figures of knowledge/kernels/mla-decode.md and
mla-decode-sm90.md from the records they cite (KV GB/s, ratio to the fastest of the round,
ranges quoted in the prose).

    uv run python scripts/audit/mla_decode_derived.py [entry.md ...]

For every table row citing a benchmark record: KV GB/s = (roofline.bytes - b*s*h*(576*2 +
512*2 + 4)) / median, and x fastest = median / the smallest median among the table's rows
with the same round_id. Prints the entry's figure next to the recomputed one and MISMATCH
where they differ at the entry's precision.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REC = re.compile(r"`(results/[^`]+benchmark[^`]+\.json)`")


def load(p: str) -> dict:
    return json.loads((ROOT / p).read_text(encoding="utf-8"))


def same(shown: str, value: float) -> bool:
    dec = len(shown.split(".")[1]) if "." in shown else 0
    return abs(float(shown) - value) <= 0.5 * 10 ** (-dec) + 1e-9


def main(entries: list[str]) -> int:
    bad = 0
    for e in entries:
        rows = []
        for line in (ROOT / e).read_text(encoding="utf-8").splitlines():
            if not line.startswith("|"):
                continue
            m = REC.search(line)
            if not m:
                continue
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows.append((cells, load(m.group(1)), m.group(1)))
        print(f"# {e}: {len(rows)} benchmark rows")
        best: dict[str, float] = {}
        for _, r, _ in rows:
            rid = r.get("round_id")
            if rid:
                best[rid] = min(best.get(rid, 1e30), r["timing"]["median_us"])
        for cells, r, _path in rows:
            p = r["problem"]
            med = r["timing"]["median_us"]
            kv = (
                (r["roofline"]["bytes"] - p["b"] * p["s"] * p["h"] * (576 * 2 + 512 * 2 + 4))
                / med
                / 1e3
            )
            ratio = med / best[r["round_id"]] if r.get("round_id") else None
            nums = re.findall(r"\d+(?:\.\d+)?", " ".join(cells[2:-1]))
            shown_med = nums[0] if nums else "?"
            out = [
                f"{cells[0][:60]:60s}",
                f"median {shown_med} vs {med:.2f}",
                f"p10-p90 {r['timing']['p10_us']:.1f}-{r['timing']['p90_us']:.1f}",
                f"TFLOP/s {r['roofline']['tflops']:.1f}",
                f"KV GB/s {kv:.0f}",
                f"ratio {ratio:.2f}" if ratio else "ratio -",
                f"round {r.get('round_id')}",
                f"check {r.get('check', {}).get('passed')}",
            ]
            flags = []
            if not same(shown_med, med):
                flags.append("MEDIAN")
            if len(cells) >= 6 and re.fullmatch(r"\d+", cells[3]) and not same(cells[3], kv):
                flags.append(f"KV({cells[3]})")
            if (
                len(cells) >= 6
                and ratio
                and re.fullmatch(r"\d+\.\d+", cells[4])
                and not same(cells[4], ratio)
            ):
                flags.append(f"RATIO({cells[4]})")
            bad += bool(flags)
            print("  ".join(out) + ("  MISMATCH " + ",".join(flags) if flags else "  ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:] or ["knowledge/kernels/mla-decode.md"]))
