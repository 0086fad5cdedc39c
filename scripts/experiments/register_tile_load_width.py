"""Experiment: how wide are the global loads a thread issues into a register tensor's row, by
that tensor's layout? (The devlog of mla_decode_sm90, "Session 21": the combine kernel's
batched split loads compiled to 4-byte loads.)

It compiles on this CPU host, through the CuTe DSL (its own ptxas), for sm_90a:

* the KB snippet ``knowledge/snippets/column-major-register-tile-splits-vector-loads.py``
  both ways: a column-major ``(NB, 4)`` register tensor, and one with each row's 4 columns
  contiguous;
* ``mla_decode_sm90`` at h=128 (32, 4096), seesaw steps 33 (the combine's column-major
  ``(splits, k, 4)`` tensor) and 36 (its columns contiguous);

and counts ``LDG.E`` (4 bytes), ``LDG.E.64`` and ``LDG.E.128`` in each cubin's SASS.

    uv run python scripts/experiments/register_tile_load_width.py [--record]

``--record`` writes one result record (package "experiments", kernel
"register-tile-load-width") with the counts per build.
"""

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SNIPPET = ROOT / "knowledge/snippets/column-major-register-tile-splits-vector-loads.py"
WIDTHS = ("", ".64", ".128")


def widths(sass: str) -> dict[str, int]:
    """``LDG.E<w>`` count per width suffix in ``sass`` (``""`` is the 4-byte load)."""
    return {f"LDG.E{w}": len(re.findall(rf"\bLDG\.E{re.escape(w)}(?![.\w])", sass)) for w in WIDTHS}


def snippet_counts() -> dict[str, dict[str, int]]:
    from kernelplan.kb.snippets import load_module

    mod = load_module(SNIPPET)
    out = {}
    for name, contiguous in (("snippet column-major", False), ("snippet rows contiguous", True)):
        got = mod.load_widths(contiguous)
        out[name] = {"LDG.E": got[""], "LDG.E.128": got[".128"]}
    return out


def mla_counts() -> dict[str, dict[str, int]]:
    from kernelplan import static
    from kernelplan.registry import load_plan_class

    plan = load_plan_class("mla", "mla_decode_sm90")()
    prob = plan.problem(b=32, t=4096)
    out = {}
    for step in (33, 36):
        st = plan.run_static(prob, plan.config(prob, {"step": str(step)}))
        cubin = Path(st["cubin_path"])
        cubin = cubin if cubin.is_absolute() else ROOT / cubin
        counts = widths(static._run_tool("cuobjdump", "-sass", cubin))
        counts["combine instructions"] = st["functions"][0]["instructions"]
        out[f"mla_decode_sm90 step {step} (both kernels)"] = counts
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--record", action="store_true", help="write a result record")
    args = ap.parse_args()
    rows = {**snippet_counts(), **mla_counts()}
    for name, c in rows.items():
        print(f"{name:40s} " + "  ".join(f"{k} {v}" for k, v in c.items()))
    if args.record:
        from kernelplan.records import write_experiment

        path = write_experiment(
            "register-tile-load-width",
            "scripts/experiments/register_tile_load_width.py",
            {"arch": "sm_90a", "snippet": str(SNIPPET.relative_to(ROOT)), "mla": "b=32 t=4096"},
            {"builds": rows},
        )
        print(f"record: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
