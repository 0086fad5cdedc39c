"""The one table renderer: rows (dicts with the same keys) as markdown, or on the terminal
through ``rich`` where it is installed. Every table of the project (check, profile, analyze,
ncu, compare, report) goes through here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: Columns shown left-aligned; the rest are numbers.
TEXT_COLUMNS = ("kernel", "implementation", "package", "config", "device", "problem", "result")


def markdown(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    """A markdown table of ``rows`` (``columns`` picks and orders the keys; default: the
    first row's). ``|`` inside a cell becomes ``/``."""
    if not rows:
        return "(no rows)"
    cols = list(columns or rows[0])
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        out.append("| " + " | ".join(str(r.get(c, "")).replace("|", "/") for c in cols) + " |")
    return "\n".join(out)


def show(rows: Sequence[Mapping[str, Any]], title: str, *, log=print) -> None:
    """Print ``rows`` as a terminal table (rich), or as markdown where rich is absent or
    ``log`` is not ``print`` (a log file, a test)."""
    if not rows:
        log(f"{title}: (no rows)")
        return
    try:
        if log is not print:
            raise ImportError
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        log(title)
        log(markdown(rows))
        return
    t = Table(title=title)
    for k in rows[0]:
        t.add_column(k, justify="left" if k in TEXT_COLUMNS else "right")
    for r in rows:
        t.add_row(*[str(r.get(k, "")) for k in rows[0]])
    Console().print(t)


def function_label(kernel_label: str, symbol: str) -> str:
    """The table's name for another kernel of the same module (e.g. a split-KV combine
    launched after the main kernel): ``<kernel label> / <name>``, where ``<name>`` is the
    DSL function's name inside its mangled symbol (``kernel_cutlass_combine_cute_...`` ->
    ``combine``), or the symbol itself when it is not one of the DSL's."""
    import re

    m = re.match(r"kernel_cutlass_(\w+?)_cute_", symbol)
    return f"{kernel_label} / {m.group(1) if m else symbol}"


def static_table(static_dicts: Sequence[Mapping[str, Any]]) -> str:
    """Markdown table of static-analysis results (the dicts ``KernelPlan.run_static``
    returns), one row per kernel and one more per other kernel of its module (its
    ``functions``, e.g. a split-KV combine: ``<kernel> / combine``), then a note per kernel
    with a launch constant compiled in
    (``max_active_clusters``: the value and where it came from), whose registers a separate
    ``cuobjdump -res-usage`` run did not confirm, or that spills registers."""
    import dataclasses

    from . import static

    fields = {f.name for f in dataclasses.fields(static.StaticReport)}
    reports, notes = [], []
    for d in static_dicts:
        r = static.StaticReport(**{k: v for k, v in d.items() if k in fields})
        r.kernel = d.get("label", r.kernel)
        reports.append(r)
        for f in d.get("functions") or []:
            fr = static.StaticReport(**{k: v for k, v in f.items() if k in fields})
            fr.kernel = function_label(r.kernel, str(f.get("kernel", "?")))
            reports.append(fr)
        meta = d.get("meta") or {}
        consts = {k: v for k, v in meta.items() if k.endswith("max_active_clusters")}
        if d.get("max_active_clusters") is not None:
            consts.setdefault("max_active_clusters", d["max_active_clusters"])
        for name, value in consts.items():
            why = meta.get(f"{name}_from")
            notes.append(
                f"- `{r.kernel}`: {name} = {value} compiled in" + (f" ({why})" if why else "")
            )
        check = d.get("res_usage_check") or {}
        if check and not check.get("match"):
            notes.append(
                f"- `{r.kernel}`: registers {r.registers} NOT confirmed by "
                f"{check.get('tool')} ({check.get('registers')})"
            )
    text = static.format_table(reports)
    return text + ("\n" + "\n".join(notes) + "\n" if notes else "")
