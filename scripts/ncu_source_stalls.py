"""Where a warp-specialised kernel's warps stall, per role and per SASS instruction.

Input: the SASS source page of an Nsight Compute report, exported as CSV on the machine that
has ``ncu`` (the report needs the SourceCounters section, which ``--set full`` collects)::

    ncu --import REPORT.ncu-rep --page source --csv --print-source sass > REPORT.csv

(``scripts/device/ncu-source.sh`` does that for every report in a folder). The CSV may be
xz-compressed. Only the first kernel of the file is read (the main kernel; a split-KV
combine kernel follows it).

Roles come from ``setmaxnreg``: the SASS after ``USETMAXREG.TRY_ALLOC`` is the warpgroups that
raise their registers (the MMA warpgroups, "math"), the SASS after ``USETMAXREG.DEALLOC`` the
ones that give registers back (the load or dequantisation warpgroup, "producer"), everything
before either "common". A kernel without setmaxnreg is one role, "common". This relies on the
compiler laying the roles' code out in that order, as ptxas did for mla_decode_sm90's
producer builds (CUDA 13, nvidia-cutlass-dsl 4.8.1).

Output: per role, the share of the warp-stall samples and its top stall reasons; then the
instructions with the most samples, each with its role and its top reasons. A
``@!P BRA`` with ``long_sb`` right after a ``SYNCS.PHASECHK.TRANS64.TRYWAIT`` is an mbarrier
wait (the warp waits for a TMA or a producer's arrive); ``long_sb`` on an ALU instruction is
a wait for a global (or local) load's data.

    python scripts/ncu_source_stalls.py REPORT.csv[.xz] [--top 25] [--context N]

Exit status 2 with one line for each file that is not such a CSV (the others are still read).
"""

from __future__ import annotations

import argparse
import collections
import csv
import io
import lzma
import sys
from collections.abc import Sequence
from pathlib import Path

SAMPLES = "Warp Stall Sampling (All Samples)"


def read_csv_rows(path: Path) -> list[list[str]]:
    """The rows of an ncu ``--csv`` export, plain or ``.xz``. Raises ValueError (file named)
    on a truncated or foreign .xz, a binary file or a file that is not CSV; OSError on a
    missing one."""
    opener = lzma.open if path.suffix == ".xz" else open
    try:
        with opener(path, "rt", newline="") as fh:
            text = fh.read()
    except (EOFError, lzma.LZMAError) as e:  # a truncated or foreign .xz (an interrupted copy)
        raise ValueError(f"{path}: not a complete .xz file ({e}): copy or export it again") from e
    except UnicodeDecodeError as e:
        raise ValueError(
            f"{path}: not a text CSV ({e.reason} at byte {e.start}); an xz file must end in .xz"
        ) from e
    csv.field_size_limit(max(csv.field_size_limit(), len(text)))  # one SASS line per field
    try:
        return list(csv.reader(io.StringIO(text)))
    except csv.Error as e:
        raise ValueError(f"{path}: not a CSV export ({e})") from e


def read_source_page(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """The first kernel's rows of an ``ncu --page source --csv`` export: (stall reason
    columns, one dict per SASS instruction in address order). Raises ValueError when the file
    has no such table."""
    rows = read_csv_rows(path)
    head = next((i for i, r in enumerate(rows) if SAMPLES in r and "Source" in r), None)
    if head is None:
        raise ValueError(f"{path}: no '{SAMPLES}' column (export with --page source --csv)")
    hdr = rows[head]
    stalls = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    data = []
    for r in rows[head + 1 :]:
        if r and r[0] == "Kernel Name":
            break  # the next kernel
        if len(r) == len(hdr) and r != hdr:
            data.append(dict(zip(hdr, r, strict=True)))
    if not data:
        raise ValueError(f"{path}: the source table is empty")
    return stalls, data


def roles(data: list[dict[str, str]]) -> list[str]:
    """The role of each instruction: common, then math after TRY_ALLOC, producer after
    DEALLOC (module docstring)."""
    role, out = "common", []
    for d in data:
        src = d["Source"]
        if "USETMAXREG.TRY_ALLOC" in src:
            role = "math"
        elif "USETMAXREG.DEALLOC" in src:
            role = "producer"
        out.append(role)
    return out


def _int(text: str) -> int:
    """A sample count as ncu prints it: ``1234``, ``1,234`` (thousands separators) or
    ``1234.0``; an empty cell is 0. Raises ValueError on anything else, so that no count is
    silently dropped."""
    t = text.strip().replace(",", "")
    if not t:
        return 0
    try:
        return int(float(t))
    except ValueError:
        raise ValueError(f"sample count {text!r} is not a number") from None


def summarise(path: Path, top: int = 25, context: int = 0) -> str:
    """The report for one export: samples and top reasons per role, then the ``top``
    instructions by samples, each with ``context`` instructions before it. Raises ValueError
    (the file named) on an unreadable export or a count that is not a number."""
    stalls, data = read_source_page(path)
    try:
        return _report(path, stalls, data, top, context)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from e


def _report(path, stalls, data, top, context) -> str:
    lab = roles(data)
    per_role: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    total = collections.Counter()
    for d, r in zip(data, lab, strict=True):
        total[r] += _int(d[SAMPLES])
        for k in stalls:
            per_role[r][k[len("stall_") :]] += _int(d[k])
    n = sum(total.values()) or 1
    out = [f"{path.name}: {len(data)} instructions, {sum(total.values())} stall samples"]
    for r, c in total.most_common():
        reasons = ", ".join(f"{k} {v}" for k, v in per_role[r].most_common(5) if v)
        out.append(f"  {r:8s} {c:7d} ({100 * c / n:4.1f}%)  {reasons}")
    out.append(f"  top {top} instructions (index, role, samples, SASS, top reasons):")
    order = sorted(range(len(data)), key=lambda i: -_int(data[i][SAMPLES]))[:top]
    for i in order:
        d = data[i]
        why = sorted(((_int(d[k]), k[len("stall_") :]) for k in stalls), reverse=True)[:2]
        why_s = ", ".join(f"{k} {v}" for v, k in why if v)
        sass = d["Source"].strip()[:64]
        out.append(f"  {i:6d} {lab[i]:8s} {_int(d[SAMPLES]):6d}  {sass:64s} {why_s}")
        for j in range(max(0, i - context), i):
            out.append(f"  {'':6s} {'':8s} {'':6s}    {data[j]['Source'].strip()[:64]}")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="ncu_source_stalls.py", description=__doc__.split("\n")[0])
    ap.add_argument("csv", nargs="+", type=Path, help="ncu --page source --csv exports (.xz ok)")
    ap.add_argument("--top", type=_count, default=25, help="instructions listed (default 25)")
    ap.add_argument("--context", type=_count, default=0, help="instructions shown before each")
    args = ap.parse_args(argv)
    status = 0
    for p in args.csv:  # every file is read: a bad one is reported and the rest still run
        try:
            print(summarise(p, args.top, args.context))
        except (OSError, ValueError) as e:
            print(f"ncu_source_stalls: {e}", file=sys.stderr)
            status = 2
    return status


def _count(text: str) -> int:
    """argparse type: an integer >= 0."""
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"give an integer >= 0 (got {text!r})")
    return n


if __name__ == "__main__":
    sys.exit(main())
