"""A decode kernel's warp-stall samples in classes (a)-(h), as cycles per CTA-page.

What it computes: from the SASS source page of an Nsight Compute report (the first kernel of an
``ncu --page source --csv`` export, read by ``scripts/ncu_source_stalls.py``; .xz ok), every
instruction's PC samples split into the classes below, per class and per region of the code,
in samples and in cycles per CTA-page; with the raw page (``ncu --page raw --csv``) also the
elapsed cycles per page and the rest no sample covers, class (h). The method is session 29's,
as session 31 wrote it down: ``results/logs/2026-12-07-h100-session31/call3-ncu/
stall-comparison.md`` ("Method and normalisation"; also used by ``call5-ncu-s2/
stall-comparison-s2.md`` and session 33's ``call3-idle-ncu/stall-comparison-85.md``).

Classes (per instruction, and for ``barrier`` samples per stall reason):

(a) page data (mbarrier): a ``SYNCS.PHASECHK.TRANS64.TRYWAIT`` and the ``@!P BRA`` on its
    predicate (the first one within ``--trywait-window`` instructions, 30 by default: up to ~30
    later in FlashMLA and in step 85; the search stops where a SETP or TRYWAIT redefines P).
(b) own WGMMA wait: ``WARPGROUP.DEPBAR`` and a 128-thread ``BAR.SYNC ..., 0x80`` within
    ``--depbar-window`` (4) instructions after one, with all their samples; also the
    ``barrier`` samples that land on later instructions while such a barrier is the nearest
    preceding ``BAR.SYNC`` (the samples they defer).
(c) named barriers + P publish: any other ``BAR.SYNC`` (all its samples), the ``barrier``
    samples on any other instruction (assigned to the nearest preceding ``BAR.SYNC``, also where
    they land on a TRYWAIT), and the P publish: STSM, the ``@!PT LDS RZ`` placeholders,
    MEMBAR, FENCE.VIEW.ASYNC, BAR.ARV.
(d) softmax math: float ops (opcodes starting with F, except FENCE), MUFU, SHFL, HADD2, HMUL2,
    HFMA2, LDS*/STS* (LDSM included; STSM is (c)).
(e) WGMMA issue: HGMMA and WARPGROUP.ARRIVE.
(f) TMA issue / other: the rest (integer, R2UR, UTMALDG, branches, ...).
(g) prologue / Q / epilogue: everything outside the loop's SASS range ``--loop FIRST LAST``,
    whatever the instruction.
(h) no sample: elapsed SM time per page (``sm__cycles_elapsed.avg`` x busy SMs / CTA-pages)
    minus the sampled time; load imbalance, launch ramp and tail. Needs ``--raw``.

Rules are tried in this order: outside the loop (g); DEPBAR or such a 128-thread barrier (b);
any other BAR.SYNC (c); then the ``barrier`` samples go to (b) or (c) by the nearest preceding
BAR.SYNC and the instruction's other samples to (c) publish, (a), (e), (d), (f), the first that
matches.

Units: one PC sample per SM every ``smsp__pcsamp_interval_cycles`` (2,048 in these reports), so
a class's cycles per CTA-page = samples x sampling interval / CTA-pages: the busy SM's time per
page split by what the sampled warp was doing. CTA-pages is the number of (CTA, KV page) pairs
the launch works on (65,536 at batch 128, 16,384 tokens, page 64). ``warpgroup_arrive`` (All
Samples minus the ``stall_*`` columns) is that stall reason, which the page has no column for.

Inputs: SASS indices are 0-based positions in the source page's first kernel, as
``ncu_source_stalls.py`` prints them; ranges are inclusive. ``--qk`` marks the QK phases (one
or more ranges inside the loop) and ``--start`` loop code that belongs to the segment start
(FlashMLA's peeled first S); they change the regions table only, not the classes. The raw page's
row ``--raw-row`` (0: the first profiled launch, whose samples the source page holds; the tool
notes a sample-count mismatch) gives the elapsed cycles, the sampling interval and the SM count.

    python scripts/ncu_stall_classes.py PAGE.csv[.xz] --loop FIRST LAST --pages N \\
        [--qk FIRST LAST]... [--start FIRST LAST]... [--raw PAGE.raw.csv[.xz]]

Output: Markdown tables: per class, per region by class, and the QK phases' items (page waits,
own WGMMA waits, WGMMA issue split into ARRIVE / first HGMMA after each ARRIVE / other HGMMAs,
``mio`` on them, other with ``R2UR``). Bad input (a missing or foreign file, a bad range) gives
one line on stderr and exit status 2.
"""

import argparse
import collections
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ncu_source_stalls import SAMPLES, _count, _int, read_csv_rows, read_source_page  # noqa: E402

CLASSES = "abcdefg"
NAMES = {
    "a": "(a) page data (mbarrier)",
    "b": "(b) own WGMMA wait",
    "c": "(c) named barriers + P publish",
    "d": "(d) softmax math",
    "e": "(e) WGMMA issue",
    "f": "(f) TMA issue / other",
    "g": "(g) prologue / Q / epilogue",
}
REGIONS = ("QK phases", "rest of the loop", "segment start", "epilogue")
TRYWAIT_PRED = re.compile(r"TRYWAIT\S*\s+(U?P\d)\b")
NEG_BRA = re.compile(r"@!(U?P\d)\s+BRA\b")
FLOAT_LIKE = ("MUFU", "SHFL", "LDS", "STS", "HADD2", "HMUL2", "HFMA2")


@dataclass
class Instr:
    """One SASS instruction of the source page."""

    index: int
    sass: str
    samples: int
    reasons: dict[str, int] = field(default_factory=dict)  # stall_X -> X: samples

    @property
    def opcode(self) -> str:
        t = self.sass.split()
        if t and t[0].startswith("@"):
            t = t[1:]
        return t[0] if t else ""

    @property
    def warpgroup_arrive(self) -> int:
        """All Samples minus the stall_* columns: the warpgroup_arrive reason."""
        return self.samples - sum(self.reasons.values())


def load(path: Path) -> list[Instr]:
    """The first kernel's instructions of a source page. Raises ValueError (file named) on a
    file that is not such an export or a count that is not a number."""
    stalls, data = read_source_page(path)
    try:
        return [
            Instr(
                i,
                d["Source"].strip(),
                _int(d[SAMPLES]),
                {k.removeprefix("stall_"): _int(d[k]) for k in stalls},
            )
            for i, d in enumerate(data)
        ]
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from e


def _is_bar_sync(op: str) -> bool:
    return op.startswith("BAR.SYNC")


def _threads_128(sass: str) -> bool:
    return sass.replace(" ", "").endswith(",0x80")


def wgmma_barriers(instrs: list[Instr], window: int = 4) -> set[int]:
    """Indices of 128-thread BAR.SYNCs within ``window`` instructions after a DEPBAR."""
    out = set()
    for r in instrs:
        if _is_bar_sync(r.opcode) and _threads_128(r.sass):
            lo = max(0, r.index - window)
            if any(instrs[j].opcode.startswith("WARPGROUP.DEPBAR") for j in range(lo, r.index)):
                out.add(r.index)
    return out


def page_waits(instrs: list[Instr], window: int = 30) -> tuple[set[int], set[int]]:
    """(TRYWAIT indices, indices of the ``@!P BRA`` on each one's predicate)."""
    tries, bras = set(), set()
    for r in instrs:
        if "TRYWAIT" not in r.sass:
            continue
        tries.add(r.index)
        m = TRYWAIT_PRED.search(r.sass)
        if not m:
            continue
        p = m.group(1)
        redefines = re.compile(r"(SETP|TRYWAIT)\S*\s+" + p + r"\b")
        for j in range(r.index + 1, min(len(instrs), r.index + window + 1)):
            s = instrs[j].sass
            b = NEG_BRA.match(s)
            if b and b.group(1) == p:
                bras.add(j)
                break
            if redefines.search(s):
                break
    return tries, bras


def _instruction_class(r: Instr, waits: set[int]) -> str:
    """The class of an in-loop instruction's non-barrier samples."""
    o, s = r.opcode, r.sass
    publish = ("STSM", "MEMBAR", "FENCE.VIEW.ASYNC", "BAR.ARV")
    if o.startswith(publish) or (o.startswith("LDS") and "RZ" in s.split(",")[0] and "@!PT" in s):
        return "c"
    if r.index in waits:
        return "a"
    if o.startswith(("HGMMA", "WARPGROUP.ARRIVE")):
        return "e"
    if (o.startswith("F") and not o.startswith("FENCE")) or o.startswith(FLOAT_LIKE):
        return "d"
    return "f"


def classify(
    instrs: list[Instr], first: int, last: int, waits: set[int], btype: set[int]
) -> list[collections.Counter]:
    """Per instruction, its samples by class (module docstring); ``first``-``last`` is the
    loop, inclusive; ``waits`` the page waits' indices (:func:`page_waits`, both sets) and
    ``btype`` the barriers of class (b) (:func:`wgmma_barriers`)."""
    out, last_bar = [], None
    for r in instrs:
        o = r.opcode
        if _is_bar_sync(o):
            last_bar = r.index
        c: collections.Counter = collections.Counter()
        if not first <= r.index <= last:
            c["g"] += r.samples
        elif o.startswith("WARPGROUP.DEPBAR") or r.index in btype:
            c["b"] += r.samples
        elif _is_bar_sync(o):
            c["c"] += r.samples
        else:
            bar = r.reasons.get("barrier", 0)
            if bar:
                c["b" if last_bar in btype else "c"] += bar
            if r.samples - bar:
                c[_instruction_class(r, waits)] += r.samples - bar
        out.append(c)
    return out


def read_raw(path: Path, row: int) -> dict[str, str]:
    """Row ``row`` of an ``ncu --page raw --csv`` export (names, units, then one row per
    profiled kernel) as name -> text. Raises ValueError on anything else."""
    rows = read_csv_rows(path)
    if not rows or "smsp__pcsamp_sample_count" not in rows[0]:
        raise ValueError(f"{path}: no smsp__pcsamp_sample_count column (export --page raw --csv)")
    data = rows[2:]
    if not 0 <= row < len(data):
        raise ValueError(f"{path}: --raw-row {row} is not one of its {len(data)} kernel rows")
    return dict(zip(rows[0], data[row], strict=False))


def _raw_number(raw: dict[str, str], name: str, path: Path) -> float:
    try:
        return float(raw[name].replace(",", ""))
    except (KeyError, ValueError):
        raise ValueError(f"{path}: no number for {name}") from None


@dataclass
class Setup:
    """What the report needs besides the source page."""

    first: int
    last: int
    pages: int
    qk: list[tuple[int, int]]
    start: list[tuple[int, int]]
    interval: float = 2048.0
    elapsed: float | None = None  # sm__cycles_elapsed.avg
    busy_sms: int | None = None
    notes: list[str] = field(default_factory=list)


def check_ranges(n: int, s: Setup) -> None:
    """Raises ValueError on a range outside the page or the loop, or overlapping ones."""
    if not 0 <= s.first <= s.last < n:
        raise ValueError(
            f"--loop {s.first} {s.last}: give 0 <= FIRST <= LAST < {n} (the page has {n} "
            "instructions)"
        )
    seen: list[tuple[int, int, str]] = []
    for opt, ranges in (("--qk", s.qk), ("--start", s.start)):
        for a, b in ranges:
            if not s.first <= a <= b <= s.last:
                raise ValueError(
                    f"{opt} {a} {b}: give FIRST <= LAST inside the loop {s.first}-{s.last}"
                )
            for a2, b2, o2 in seen:
                if a <= b2 and a2 <= b:
                    raise ValueError(f"{opt} {a} {b} overlaps {o2} {a2} {b2}")
            seen.append((a, b, opt))


def _inside(i: int, ranges: list[tuple[int, int]]) -> bool:
    return any(a <= i <= b for a, b in ranges)


def region(i: int, s: Setup) -> str:
    """The region of SASS index ``i``: one of REGIONS."""
    if i < s.first:
        return "segment start"
    if i > s.last:
        return "epilogue"
    if _inside(i, s.qk):
        return "QK phases"
    if _inside(i, s.start):
        return "segment start"
    return "rest of the loop"


def _ranges(rs: list[tuple[int, int]]) -> str:
    return ", ".join(f"{a}-{b}" for a, b in rs)


def report(path: Path, instrs: list[Instr], s: Setup, trywait_window=30, depbar_window=4) -> str:
    """The Markdown report for one source page (module docstring)."""
    tries, bras = page_waits(instrs, trywait_window)
    btype = wgmma_barriers(instrs, depbar_window)
    per = classify(instrs, s.first, s.last, tries | bras, btype)
    cyc = s.interval / s.pages  # cycles per page of one sample
    total = collections.Counter()
    for c in per:
        total.update(c)
    n = sum(r.samples for r in instrs)
    out = [
        f"{path.name}: {len(instrs)} instructions, {n:,} samples; loop SASS {s.first}-{s.last}, "
        f"{s.pages:,} CTA-pages, {s.interval:,.0f} cycles per sample: cycles/page = samples x "
        f"{s.interval:,.0f} / {s.pages:,}",
        *s.notes,
        "",
        "| class | samples | % | cyc/page |",
        "|---|---|---|---|",
    ]
    for k in CLASSES:
        share = 100 * total[k] / (n or 1)
        out.append(f"| {NAMES[k]} | {total[k]:,} | {share:.1f} | {total[k] * cyc:,.1f} |")
    out.append(f"| sampled | {n:,} | | {n * cyc:,.1f} |")
    if s.elapsed is not None and s.busy_sms:
        el = s.elapsed * s.busy_sms / s.pages
        out.append(f"| (h) no sample | | | {el - n * cyc:,.1f} |")
        how = f"{s.elapsed:,.0f} x {s.busy_sms} SMs / {s.pages:,}"
        out.append(f"| elapsed / page ({how}) | | | {el:,.1f} |")
    wa = sum(r.warpgroup_arrive for r in instrs)
    out.append(f"\n`warpgroup_arrive` (All Samples minus `stall_*`), whole kernel: {wa:,}")

    reg: dict[str, collections.Counter] = {k: collections.Counter() for k in REGIONS}
    for r, c in zip(instrs, per, strict=True):
        reg[region(r.index, s)].update(c)
    sass = {
        "QK phases": _ranges(s.qk) or "(no --qk)",
        "rest of the loop": f"{s.first}-{s.last} less the others",
        "segment start": ", ".join(x for x in (f"< {s.first}", _ranges(s.start)) if x),
        "epilogue": f"> {s.last}",
    }
    heads = " | ".join(f"({k})" for k in CLASSES)
    out += [
        "",
        f"| region (cycles/page) | SASS | samples | total | {heads} |",
        "|---|---|---|---|" + "---|" * len(CLASSES),
    ]
    for name in REGIONS:
        c = reg[name]
        t = sum(c.values())
        cells = " | ".join(f"{c[k] * cyc:,.1f}" if c[k] else "" for k in CLASSES)
        out.append(f"| {name} | {sass[name]} | {t:,} | {t * cyc:,.1f} | {cells} |")
    if s.qk:
        out += ["", *qk_items(instrs, per, s, cyc, bras)]
    return "\n".join(out)


def qk_items(
    instrs: list[Instr],
    per: list[collections.Counter],
    s: Setup,
    cyc: float,
    bras: set[int],
) -> list[str]:
    """The QK phases' table: the samples of each class's main items there (``bras``: the page
    waits' ``@!P BRA`` indices, :func:`page_waits`)."""
    qk = [r for r in instrs if _inside(r.index, s.qk)]
    cls: collections.Counter = collections.Counter()
    for r in qk:
        cls.update(per[r.index])
    arrives = [r for r in qk if r.opcode.startswith("WARPGROUP.ARRIVE")]
    hgmma = [r for r in qk if r.opcode.startswith("HGMMA")]
    first_after: list[Instr] = []
    for a in arrives:  # the first HGMMA after each ARRIVE, before the next ARRIVE
        for r in qk:
            if r.index <= a.index:
                continue
            if r.opcode.startswith("WARPGROUP.ARRIVE"):
                break
            if r.opcode.startswith("HGMMA"):
                first_after.append(r)
                break
    firsts = {r.index for r in first_after}
    others = [r for r in hgmma if r.index not in firsts]
    depbars = [r for r in qk if r.opcode.startswith("WARPGROUP.DEPBAR")]
    bra = [r for r in qk if r.index in bras]
    r2ur = [r for r in qk if r.opcode.startswith("R2UR")]

    def sm(rs, key=None):
        return sum(r.samples if key is None else key(r) for r in rs)

    mio = sum(r.reasons.get("mio", 0) for r in arrives + hgmma)
    return [
        f"QK phases (SASS {_ranges(s.qk)}), samples:",
        "",
        "| item | instructions | samples | cyc/page |",
        "|---|---|---|---|",
        f"| (a) page waits | | {cls['a']:,} | {cls['a'] * cyc:,.1f} |",
        f"| - on the `@!P BRA`s | {len(bra)} | {sm(bra):,} | {sm(bra) * cyc:,.1f} |",
        f"| (b) own WGMMA wait | | {cls['b']:,} | {cls['b'] * cyc:,.1f} |",
        f"| - on `WARPGROUP.DEPBAR` | {len(depbars)} | {sm(depbars):,} | "
        f"{sm(depbars) * cyc:,.1f} |",
        f"| (e) WGMMA issue, all | | {cls['e']:,} | {cls['e'] * cyc:,.1f} |",
        f"| - `WARPGROUP.ARRIVE` | {len(arrives)} | {sm(arrives):,} | {sm(arrives) * cyc:,.1f} |",
        f"| - first HGMMA after each ARRIVE (`warpgroup_arrive`) | {len(first_after)} | "
        f"{sm(first_after):,} ({sm(first_after, lambda r: r.warpgroup_arrive):,}) | "
        f"{sm(first_after) * cyc:,.1f} |",
        f"| - other HGMMAs (`wait`) | {len(others)} | "
        f"{sm(others):,} ({sm(others, lambda r: r.reasons.get('wait', 0)):,}) | "
        f"{sm(others) * cyc:,.1f} |",
        f"| - `mio` reason on the HGMMAs and ARRIVEs | | {mio:,} | {mio * cyc:,.1f} |",
        f"| (f) other | | {cls['f']:,} | {cls['f'] * cyc:,.1f} |",
        f"| - `R2UR` | {len(r2ur)} | {sm(r2ur):,} | {sm(r2ur) * cyc:,.1f} |",
    ]


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse would print the usage too)
        self.exit(2, f"ncu_stall_classes: {message} (see --help)\n")


def _positive(kind):
    def conv(text: str):
        try:
            v = kind(text)
        except ValueError:
            v = 0
        if v <= 0:
            raise argparse.ArgumentTypeError(f"give a number > 0 (got {text!r})")
        return v

    return conv


def main(argv: Sequence[str] | None = None) -> int:
    ap = _Parser(
        prog="ncu_stall_classes.py",
        description=__doc__.split("\n")[0],
        epilog="Classes, units and sources: see the module docstring.",
    )
    ap.add_argument("page", type=Path, help="ncu --page source --csv export (.xz ok)")
    ap.add_argument(
        "--loop",
        nargs=2,
        type=_count,
        required=True,
        metavar=("FIRST", "LAST"),
        help="the page loop's SASS indices, inclusive (outside: class g)",
    )
    ap.add_argument(
        "--pages",
        type=_positive(int),
        required=True,
        help="CTA-pages of the launch (65536 at b=128, t=16384, page 64)",
    )
    ap.add_argument(
        "--qk",
        nargs=2,
        type=_count,
        action="append",
        default=[],
        metavar=("FIRST", "LAST"),
        help="a QK-phase range inside the loop (repeatable)",
    )
    ap.add_argument(
        "--start",
        nargs=2,
        type=_count,
        action="append",
        default=[],
        metavar=("FIRST", "LAST"),
        help="loop code counted as segment start, e.g. FM's first S (repeatable)",
    )
    ap.add_argument("--raw", type=Path, help="the raw page (ncu --page raw --csv, .xz ok)")
    ap.add_argument(
        "--raw-row",
        type=_count,
        default=0,
        help="its kernel row (default 0, the launch the source page holds)",
    )
    ap.add_argument(
        "--interval",
        type=_positive(float),
        help="cycles per sample (default: the raw page's, else 2048)",
    )
    ap.add_argument(
        "--busy-sms", type=_positive(int), help="SMs that work (default: the raw page's SM count)"
    )
    ap.add_argument(
        "--trywait-window",
        type=_positive(int),
        default=30,
        help="instructions searched for a TRYWAIT's @!P BRA (default 30)",
    )
    ap.add_argument(
        "--depbar-window",
        type=_positive(int),
        default=4,
        help="a 128-thread BAR.SYNC this close after a DEPBAR is (b) (default 4)",
    )
    args = ap.parse_args(argv)
    qk, start = [tuple(r) for r in args.qk], [tuple(r) for r in args.start]
    s = Setup(args.loop[0], args.loop[1], args.pages, qk, start)
    try:
        instrs = load(args.page)
        check_ranges(len(instrs), s)
        if args.raw is not None:
            _from_raw(args, s, sum(r.samples for r in instrs))
        elif args.interval:
            s.interval = args.interval
        print(report(args.page, instrs, s, args.trywait_window, args.depbar_window))
    except OSError as e:  # a missing or unreadable file: its name and why
        print(f"ncu_stall_classes: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"ncu_stall_classes: {e}", file=sys.stderr)
        return 2
    return 0


def _from_raw(args, s: Setup, samples: int) -> None:
    raw = read_raw(args.raw, args.raw_row)
    s.elapsed = _raw_number(raw, "sm__cycles_elapsed.avg", args.raw)
    measured = _raw_number(raw, "smsp__pcsamp_interval_cycles", args.raw)
    if args.interval and args.interval != measured:
        raise ValueError(f"--interval {args.interval:g} differs from {args.raw}'s {measured:g}")
    s.interval = measured
    s.busy_sms = args.busy_sms or int(
        _raw_number(raw, "device__attribute_multiprocessor_count", args.raw)
    )
    count = int(_raw_number(raw, "smsp__pcsamp_sample_count", args.raw))
    if count != samples:
        s.notes.append(
            f"note: the source page has {samples:,} samples, raw row {args.raw_row} "
            f"{count:,}: the page is not that launch's"
        )


if __name__ == "__main__":
    sys.exit(main())
