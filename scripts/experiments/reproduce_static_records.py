"""Experiment: do a package's committed static records reproduce from the current core?

For every JSON record under ``results/`` with ``kind == "static"`` and the given package, the
kernel is recompiled for the record's own arch with the record's problem and config (a
config key ``sm_count``, from before the SM count became the target's, is given to the target
instead) and analysed afresh (``run_static(..., use_cache=False)``: nothing comes from the
persistent cache). Compared: registers, dynamic and static shared memory, every SASS category
count, and ``max_active_clusters`` where the record has one compiled in. Records with the same
(kernel, problem, config, target) share one compile. No GPU needed.

    uv run python scripts/experiments/reproduce_static_records.py gemm [--kernel dense_gemm]

A record that does not reproduce but has a newer record of the same kernel, problem, config
and target (the same compile) that does reproduce is reported as ``superseded (by <record>)``:
the code it measured changed on purpose and the newer record holds today's values (records are
never edited, so the old one stays as history). Without such a newer record it is a MISMATCH.

Prints one row per record and exits 1 when any record does not reproduce and is not superseded
(or cannot be rebuilt: an unknown kernel, a problem or config the current code rejects, a failed
compile).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

SCALARS = (
    "registers",
    "spill_store_bytes",
    "spill_load_bytes",
    "stack_bytes",
    "dynamic_smem_bytes",
    "static_smem_bytes",
)


def find_records(results: Path, package: str, kernel: str | None) -> list[tuple[Path, dict]]:
    out = []
    for path in sorted(results.rglob("*.json")):
        try:
            rec = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(rec, dict) or rec.get("kind") != "static":
            continue
        if rec.get("package") != package or (kernel and rec.get("kernel") != kernel):
            continue
        out.append((path, rec))
    return out


def rebuild(package: str, rec: dict) -> tuple[Any, Any, Any, Any]:
    """(plan, problem, config, target) of a record, through the current API."""
    from kernelplan.registry import load_plan_class

    plan = load_plan_class(package, rec["kernel"])()
    problem = plan.problem(rec["problem"])
    cfg = {k: v for k, v in (rec.get("config") or {}).items() if k != "sm_count"}
    config = plan.config_type.from_dict(cfg)
    arch = (rec.get("static") or {}).get("arch")
    target = plan.target(arch, sm_count=(rec.get("config") or {}).get("sm_count"))
    return plan, problem, config, target


def compare(old: dict, new: dict) -> list[str]:
    """Differences as ``field old->new`` strings (empty: reproduced)."""
    diffs = []
    for f in SCALARS:
        if old.get(f) != new.get(f):
            diffs.append(f"{f} {old.get(f)}->{new.get(f)}")
    oc, nc = old.get("categories") or {}, new.get("categories") or {}
    if not oc:
        diffs.append("record has no SASS categories")
    for cat in sorted(set(oc) | set(nc)):
        if oc.get(cat, 0) != nc.get(cat, 0):
            diffs.append(f"{cat} {oc.get(cat, 0)}->{nc.get(cat, 0)}")
    mac_old, mac_new = old.get("max_active_clusters"), new.get("max_active_clusters")
    if mac_old is not None and mac_old != mac_new:
        diffs.append(f"max_active_clusters {mac_old}->{mac_new}")
    return diffs


def mark_superseded(rows: list[dict]) -> None:
    """Set ``row["superseded_by"]`` on every row that does not reproduce but has a newer
    record of the same compile key that does (the newest such record)."""
    for r in rows:
        if not r["diffs"] or r.get("key") is None:
            continue
        newer = [
            o
            for o in rows
            if o is not r and o.get("key") == r["key"] and o["created"] > r["created"]
        ]
        good = [o for o in newer if not o["diffs"]]
        if good:
            r["superseded_by"] = max(good, key=lambda o: o["created"])["record"]
        elif newer:
            r["newer_also_bad"] = max(newer, key=lambda o: o["created"])["record"]


def _created(path: Path, rec: dict) -> str:
    """Sort key for 'newer': the record's created_utc, else its file name (which starts with
    the UTC time stamp)."""
    return str(rec.get("created_utc") or path.name)


def _label(cfg: dict) -> str:
    def fmt(v):
        return "x".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)

    return " ".join(f"{k}={fmt(v)}" for k, v in cfg.items()) or "default"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("package", help="package CLI name (gemm, gemm-tutorial, epilogue, pdl, ...)")
    ap.add_argument("--kernel", help="only this kernel's records")
    ap.add_argument("--results", type=Path, default=ROOT / "results", help="records folder")
    args = ap.parse_args(argv)

    records = find_records(args.results, args.package, args.kernel)
    if not records:
        print(f"no static records of package {args.package!r} under {args.results}")
        return 1

    compiled: dict[str, Any] = {}  # one compile per (kernel, problem, config, target)
    rows = []
    for path, rec in records:
        old = rec.get("static") or {}
        prob = rec.get("problem") or {}
        row = {
            "record": str(
                path.relative_to(args.results) if path.is_relative_to(args.results) else path
            ),
            "kernel": rec.get("kernel"),
            "problem": _label(prob),
            "config": _label(rec.get("config") or {}),
            "old": old,
            "created": _created(path, rec),
            "key": None,
        }
        try:
            plan, problem, config, target = rebuild(args.package, rec)
            key = json.dumps(
                [rec["kernel"], problem.to_dict(), config.to_dict(), target.to_dict()],
                sort_keys=True,
                default=str,
            )
            row["key"] = key
            if key not in compiled:
                print(
                    f"compiling {rec['kernel']} {config.label()} for {target.sm} ...",
                    file=sys.stderr,
                )
                compiled[key] = plan.run_static(problem, config, target, use_cache=False)
            new = compiled[key]
            row["new"] = new
            row["diffs"] = compare(old, new)
        except Exception as e:  # a record the current code cannot rebuild is a failure
            msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
            row["new"] = None
            row["diffs"] = [f"ERROR {type(e).__name__}: {msg}"[:200]]
        rows.append(row)
    mark_superseded(rows)

    def pair(r, f):
        o, n = r["old"].get(f), (r["new"] or {}).get(f)
        return f"{o}" if o == n else f"{o}->{n}"

    head = ["record", "kernel", "problem", "config", "regs", "spill st/ld B", "dyn SMEM"]
    head += ["static SMEM"]
    head += ["SASS categories", "result"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    bad = superseded = 0
    for r in rows:
        ok = not r["diffs"]
        bad += not ok and "superseded_by" not in r
        superseded += "superseded_by" in r
        if r["new"] is None:
            cat_cell, result = "-", r["diffs"][0]
        else:
            names = set(r["old"].get("categories") or {}) | set(r["new"].get("categories") or {})
            cat_diffs = [d for d in r["diffs"] if d.split(" ")[0] in names]
            n_instr = sum((r["old"].get("categories") or {}).values())
            cat_cell = "; ".join(cat_diffs) or f"all {len(names)} equal ({n_instr} instr.)"
            if ok:
                result = "reproduced"
            elif "superseded_by" in r:
                result = f"superseded (by {r['superseded_by']})"
            else:
                result = "MISMATCH: " + "; ".join(r["diffs"])
                if "newer_also_bad" in r:
                    result += f" (newer {r['newer_also_bad']} does not reproduce either)"
        print(
            "| "
            + " | ".join(
                [
                    r["record"],
                    str(r["kernel"]),
                    r["problem"],
                    r["config"],
                    pair(r, "registers"),
                    pair(r, "spill_store_bytes") + "/" + pair(r, "spill_load_bytes"),
                    pair(r, "dynamic_smem_bytes"),
                    pair(r, "static_smem_bytes"),
                    cat_cell,
                    result,
                ]
            )
            + " |"
        )
    reproduced = sum(not r["diffs"] for r in rows)
    print(
        f"\n{reproduced}/{len(rows)} static records of {args.package} reproduced, "
        f"{superseded} superseded by a newer record that reproduces, {bad} failed "
        f"({len(compiled)} distinct compiles, use_cache=False)"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
