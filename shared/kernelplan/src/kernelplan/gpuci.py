"""``nox -s gpu-ci -- [package ...]``: what a GPU runner of any SM does with this checkout.

On the machine it runs on it finds the GPU's SM (:func:`kernelplan.device.current_device`),
then for every implementation of every package (or of the packages named):

- its target runs on this GPU: ``check`` (:func:`kernelplan.sessions.check_package`), then a
  short profile (:func:`kernelplan.sessions.profile_package` with few repetitions) when the
  check passed;
- it does not (another SM, or no GPU here): the static analysis
  (:func:`kernelplan.sessions.analyze_package`: compile for its own SM, read the cubin);
- a peer (no target SM, e.g. torch) with no GPU here: skipped, and said so;
- an imported CUTLASS example while the CUTLASS sources are absent: skipped, with one line
  saying how to get them (``git submodule update --init third_party/cutlass`` or
  ``CUTLASS_DIR``); the rest runs.

Nothing here names an SM: an sm_100 runner checks the Blackwell kernels and analyses the
Hopper ones, an sm_90 runner the other way round, a machine without a GPU analyses all.

It writes a markdown summary (one row per implementation and step: result, seconds, the
records written; then what was skipped and why) as
``<results>/gpu-ci/<date>-<device>/summary[-<packages>].md`` (never replacing one: a second
run of the day gets ``-2``), beside it the same rows as ``.json`` and the full log as
``.log``; the records go where ``check``/``profile``/``analyze`` put them (``--results-dir``,
default ``results/``). Exit status 1 when a check, a static analysis or a profile failed,
2 on bad input (an unknown package, a results folder that cannot be written).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import device as devmod
from . import sessions
from .errors import KernelPlanError

#: Repetitions of the short profile (``--reps``, ``--warmup``): enough for a median that shows
#: a regression of a few percent, short enough for every package on every push.
PROFILE_REPS = 20
PROFILE_WARMUP = 3


@dataclass
class Row:
    """One implementation and one step (``check``, ``static``, ``profile`` or ``skip``)."""

    package: str
    kernel: str
    target: str
    step: str
    result: str  # PASS, FAIL, ok, skipped
    detail: str = ""
    seconds: float | None = None
    records: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.result == "FAIL"


def _targets(plan: Any) -> str:
    return ", ".join(getattr(plan, "target_sm", ()) or ()) or "any GPU (peer)"


class _Tee:
    """A log function that prints each line (through ``log``) and keeps it."""

    def __init__(self, log: Callable[[str], Any]):
        self.log, self.lines = log, []

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        self.log(line)

    def since(self, n: int) -> list[str]:
        return self.lines[n:]


def _json_files(root: Path) -> set[Path]:
    return set(root.rglob("*.json")) if root.is_dir() else set()


def _load(path: Path) -> dict[str, Any]:
    try:
        rec = json.loads(path.read_text())
        return rec if isinstance(rec, dict) else {}
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return {}


def _problem_label(plan: Any, rec: dict[str, Any]) -> str:
    try:
        return plan.problem(rec.get("problem") or {}).label()
    except Exception:
        return "?"


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


class _Run:
    """The state of one gpu-ci run (rows, the results folder, the log)."""

    def __init__(self, dev, results_dir: Path, record: bool, tee: _Tee):
        self.dev, self.root, self.record, self.tee = dev, results_dir, record, tee
        self.rows: list[Row] = []

    def step(self, fn: Callable[..., int], *args, **kw) -> tuple[int, float, list[Path], list[str]]:
        """Run a session function; its exit code, seconds, new records and log lines."""
        before = _json_files(self.root) if self.record else set()
        n = len(self.tee.lines)
        t0 = time.perf_counter()
        try:
            rc = fn(*args, results_dir=self.root, record=self.record, log=self.tee, **kw)
        except Exception as e:  # a crash of one implementation is its row, not the run's end
            self.tee(f"error: {' '.join(str(a) for a in args if a)}: {type(e).__name__}: {e}")
            rc = 1
        seconds = time.perf_counter() - t0
        new = sorted(_json_files(self.root) - before) if self.record else []
        return rc, seconds, new, self.tee.since(n)

    # -- check -------------------------------------------------------------------------------
    def check(self, package: str, plan: Any) -> Row:
        rc, secs, new, lines = self.step(sessions.check_package, package, plan.name)
        checks = [r for r in (_load(p) for p in new) if r.get("kind") == "check"]
        passed = sum(bool((r.get("check") or {}).get("passed")) for r in checks)
        worst = [
            o.get("rel_norm")
            for r in checks
            for o in (r.get("check") or {}).get("outputs") or []
            if isinstance(o.get("rel_norm"), (int, float))
        ]
        skips = [ln[len("skip: ") :] for ln in lines if ln.startswith("skip: ")]
        said_pass = any(ln.startswith(plan.name) and ": PASS " in ln for ln in lines)
        if rc:
            errors = [ln for ln in lines if ln.startswith("error:")]
            fails = [ln for ln in lines if ln.startswith(plan.name) and ": FAIL " in ln]
            detail = (errors or fails or ["see the log"])[0]
            if checks:
                detail = f"{passed}/{len(checks)} problems pass; {detail}"
            result = "FAIL"
        elif checks or said_pass:
            result = "PASS"
            detail = f"{passed}/{len(checks)} problems" if checks else "passed (no records kept)"
            if worst:
                detail += f", max rel_norm {max(worst):.2e}"
            if skips:
                detail += f"; {len(skips)} not taken"
        elif skips:
            result, detail = "skipped", skips[0]
        else:
            result, detail = "skipped", "no check problem taken"
        return Row(package, plan.name, _targets(plan), "check", result, detail, secs,
                   [_rel(p, self.root) for p in new])  # fmt: skip

    # -- static ------------------------------------------------------------------------------
    def static(self, package: str, plans: list[Any], whole_package: bool) -> list[Row]:
        """The static analysis of ``plans``: one ``analyze`` of the whole package when those
        are all its CuTe DSL kernels (compiled in parallel), else one per kernel."""
        if whole_package:
            rc, secs, _new, lines = self.step(sessions.analyze_package, package, None)
            rows = [self._static_row(package, p, lines, None, rc) for p in plans]
            for r in rows:
                r.detail += f"; the package's {len(plans)} analysed together in {secs:.1f} s"
            return rows
        rows = []
        for p in plans:
            rc, secs, _new, lines = self.step(sessions.analyze_package, package, p.name)
            rows.append(self._static_row(package, p, lines, secs, rc))
        return rows

    def _static_row(self, package, plan, lines, secs, rc) -> Row:
        name = plan.name
        errors = [ln for ln in lines if ln.startswith(f"error: {name}")]
        mine = [ln for ln in lines if ln.startswith(f"{name}: ")]
        if errors or (rc and not mine):
            other = [ln for ln in lines if ln.startswith("error")]
            detail = (errors or other or [f"analyze exited {rc} (its error line is above)"])[0]
            return Row(package, name, _targets(plan), "static", "FAIL", detail, secs)
        if not mine:
            skip = [ln[len("skip: ") :] for ln in lines if ln.startswith(f"skip: {name}")]
            why = skip[0] if skip else "not analysed (see the log)"
            return Row(package, name, _targets(plan), "static", "skipped", why, secs)
        line = mine[0]
        recs: list[str] = []
        detail = line[len(name) + 2 :].split(";")[0].split(" (ready after")[0]
        if "record" in line:
            path = Path(line.rsplit(": ", 1)[-1])
            path = path if path.is_absolute() else Path.cwd() / path
            rec = _load(path) if path.exists() else {}
            st = rec.get("static") or {}
            if st:
                detail = (
                    f"{st.get('arch')}: {st.get('registers')} regs, "
                    f"{st.get('spill_store_bytes', 0)}/{st.get('spill_load_bytes', 0)} B "
                    f"spills, {st.get('dynamic_smem_bytes')} B dynamic SMEM; {detail}"
                )
            recs = [_rel(path, self.root) + (" (unchanged)" if "unchanged" in line else "")]
        return Row(package, name, _targets(plan), "static", "ok", detail, secs, recs)

    # -- profile -----------------------------------------------------------------------------
    def profile(self, package: str, plan: Any, reps: int, warmup: int) -> Row:
        rc, secs, new, lines = self.step(
            sessions.profile_package, package, plan.name, reps=reps, warmup=warmup
        )
        benches = [(p, r) for p, r in ((p, _load(p)) for p in new) if r.get("kind") == "benchmark"]
        parts = []
        for _p, r in benches:
            med = (r.get("timing") or {}).get("median_us")
            if isinstance(med, (int, float)):
                parts.append(f"{_problem_label(plan, r)} {med:.1f} us")
        if rc:
            errors = [ln for ln in lines if ln.startswith("error:")]
            result, detail = "FAIL", (errors or ["see the log"])[0]
        else:
            result = "ok"
            detail = "; ".join(parts) or f"{reps} reps (no records kept)"
        return Row(package, plan.name, _targets(plan), "profile", result, detail, secs,
                   [_rel(p, self.root) for p, _ in benches])  # fmt: skip


def run(
    packages: Sequence[str] = (),
    *,
    reps: int = PROFILE_REPS,
    warmup: int = PROFILE_WARMUP,
    profile: bool = True,
    results_dir: Path | str | None = None,
    record: bool = True,
    log: Callable[[str], Any] = print,
    today: _dt.date | None = None,
) -> tuple[int, Path]:
    """The gpu-ci run (see the module text). Returns (exit code, the summary's path)."""
    from .records import results_root
    from .registry import package_names

    root = Path(results_dir) if results_dir is not None else results_root()
    tee = _Tee(log)
    dev = devmod.current_device()
    if dev is None:
        tee("device: none (no CUDA GPU): static analysis only; checks and profiles need a GPU "
            "runner")  # fmt: skip
    else:
        tee(f"device: {dev.name} ({dev.sm}), {dev.sm_count} SMs")
    every = package_names()
    pkgs = list(packages) or every
    ci = _Run(dev, root, record, tee)
    for pkg in pkgs:
        tee(f"== {pkg}")
        plans = sessions._plans(pkg, None)
        runnable, static, cute = [], [], 0
        absent, missing = sessions.sources_absent(plans)
        for plan in plans:
            if plan.name in absent:
                why = f"needs the CUTLASS sources: {missing}"
                ci.rows.append(Row(pkg, plan.name, _targets(plan), "skip", "skipped", why))
                continue
            if isinstance(plan, sessions._Failed):
                ci.rows.append(Row(pkg, plan.name, "?", "load", "FAIL", str(plan.error)))
                tee(f"error: {plan.error}")
                continue
            cute += bool(plan.target_sm)
            try:
                devmod.require_plan_runs_on(plan, dev)
                runnable.append(plan)
            except devmod.ArchMismatch as e:
                if plan.target_sm:
                    static.append(plan)
                else:
                    ci.rows.append(Row(pkg, plan.name, _targets(plan), "skip", "skipped", str(e)))
        whole = bool(static) and len(static) == cute
        if missing and not whole:  # an analysis of the whole package says it itself
            tee(sessions._absent_line(absent, missing))
        for plan in runnable:
            row = ci.check(pkg, plan)
            ci.rows.append(row)
            if profile and row.result == "PASS":
                ci.rows.append(ci.profile(pkg, plan, reps, warmup))
            elif profile:
                why = "its check failed" if row.failed else "not checked here"
                ci.rows.append(Row(pkg, plan.name, row.target, "profile", "skipped", why))
        if static:
            ci.rows += ci.static(pkg, static, whole_package=whole)
    rc = 1 if any(r.failed for r in ci.rows) else 0
    path = write_summary(ci.rows, dev, pkgs, pkgs == every or not packages, root, tee, today,
                         reps=reps if profile else None)  # fmt: skip
    tee(f"summary: {path}")
    return rc, path


def _git_head() -> str | None:
    from .cutlass_src import repo_root

    try:
        r = subprocess.run(["git", "-C", str(repo_root()), "rev-parse", "--short=9", "HEAD"],
                           capture_output=True, text=True, timeout=10)  # fmt: skip
        return r.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _cell(s: Any) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def render(rows: list[Row], dev, packages: Sequence[str], reps: int | None, env: dict) -> str:
    """The summary as markdown."""
    what = f"{dev.name} ({dev.sm}, {dev.sm_count} SMs)" if dev else "no CUDA GPU"
    out = [f"# gpu-ci: {what}", ""]
    if dev is None:
        out += ["No GPU on this machine: every CuTe DSL kernel was compiled for its own SM and "
                "analysed (static); nothing was run or timed. Checks and profiles need a GPU "
                "runner of the kernel's SM.", ""]  # fmt: skip
    n = {k: sum(r.step == k for r in rows) for k in ("check", "static", "profile")}
    fails = [r for r in rows if r.failed]
    out += [
        f"- checkout {env.get('checkout') or '?'}; CuTe DSL {env.get('nvidia_cutlass_dsl')}; "
        f"CUTLASS pinned {str(env.get('cutlass_commit_pinned'))[:9]}, sources "
        f"{str(env.get('cutlass_commit_sources'))[:9]}; torch {env.get('torch')}; "
        f"driver {getattr(dev, 'driver', None) or '-'}",
        f"- packages: {', '.join(packages)}",
        f"- checks: {sum(r.result == 'PASS' for r in rows if r.step == 'check')} pass, "
        f"{sum(r.failed for r in rows if r.step == 'check')} fail "
        f"(of {n['check']}); static: {sum(r.result == 'ok' for r in rows if r.step == 'static')}"
        f" of {n['static']}; profiled: "
        f"{sum(r.result == 'ok' for r in rows if r.step == 'profile')}"
        + (" (no GPU)" if dev is None else f" ({reps} reps each)" if reps else " (profile off)"),
        f"- result: **{'FAIL' if fails else 'PASS'}**"
        + (
            f" ({len(fails)} failed: {', '.join(f'{r.kernel} {r.step}' for r in fails)})"
            if fails
            else ""
        ),  # fmt: skip
        "",
        "| package | implementation | target | step | result | seconds | detail | records |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        secs = f"{r.seconds:.1f}" if r.seconds is not None else "-"
        recs = "<br>".join(r.records) if r.records else "-"
        out.append(f"| {r.package} | {r.kernel} | {_cell(r.target)} | {r.step} | {r.result} | "
                   f"{secs} | {_cell(r.detail)} | {_cell(recs)} |")  # fmt: skip
    skipped = [r for r in rows if r.result == "skipped"]
    if skipped:
        out += ["", "## Skipped, and why", ""]
        out += [f"- {r.package}/{r.kernel} ({r.step}): {r.detail}" for r in skipped]
    if fails:
        out += ["", "## Failed", ""]
        out += [f"- {r.package}/{r.kernel} ({r.step}): {r.detail}" for r in fails]
    return "\n".join(out) + "\n"


def write_summary(
    rows: list[Row],
    dev,
    packages: Sequence[str],
    all_packages: bool,
    root: Path,
    tee: _Tee,
    today: _dt.date | None = None,
    reps: int | None = None,
) -> Path:
    """``<root>/gpu-ci/<date>-<device>/summary[-<packages>][-N].md`` (+ ``.json``, ``.log``),
    created exclusively: an existing summary is never replaced."""
    from .records import _slug, environment

    day = (today or _dt.datetime.now(_dt.timezone.utc).date()).isoformat()
    folder = root / "gpu-ci" / f"{day}-{_slug(dev.name) if dev else 'cpu'}"
    folder.mkdir(parents=True, exist_ok=True)
    stem = "summary" if all_packages else "summary-" + "-".join(_slug(p) for p in packages)[:80]
    env = environment()
    env["checkout"] = _git_head()
    text = render(rows, dev, packages, reps, env)
    for i in range(1, 100):
        path = folder / (f"{stem}.md" if i == 1 else f"{stem}-{i}.md")
        try:
            with open(path, "x", encoding="utf-8") as f:
                f.write(text)
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover - a hundred runs of the day
        raise KernelPlanError(f"no free summary name under {folder}")
    data = {
        "device": dev.to_dict() if dev else None,
        "packages": list(packages),
        "env": env,
        "profile_reps": reps,
        "failed": any(r.failed for r in rows),
        "rows": [asdict(r) for r in rows],
    }
    with open(path.with_suffix(".json"), "x", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    with open(path.with_suffix(".log"), "x", encoding="utf-8") as f:
        f.write("\n".join(tee.lines) + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    from .cli import die
    from .cutlass_src import check_environment
    from .records import ensure_writable
    from .registry import load_package

    p = argparse.ArgumentParser(
        prog="python -m kernelplan.gpuci",
        description="check what runs on this GPU, analyse the rest statically, profile briefly",
    )
    p.add_argument("packages", nargs="*", help="packages (default: all)")
    p.add_argument("--reps", type=int, default=PROFILE_REPS, help="profile repetitions")
    p.add_argument("--warmup", type=int, default=PROFILE_WARMUP)
    p.add_argument("--no-profile", action="store_true", help="checks and static analysis only")
    p.add_argument("--no-record", action="store_true", help="write no records (summary only)")
    p.add_argument("--results-dir", default=None, help="records and summary (default results/)")
    a = p.parse_args(argv)
    try:
        for pkg in a.packages:
            load_package(pkg)  # an unknown package: one line naming the known ones
        if a.reps < 1 or a.warmup < 0:
            return die("--reps must be at least 1 and --warmup at least 0")
        ensure_writable(a.results_dir)
        check_environment()
        rc, _path = run(
            a.packages,
            reps=a.reps,
            warmup=a.warmup,
            profile=not a.no_profile,
            results_dir=a.results_dir,
            record=not a.no_record,
        )
        return rc
    except KernelPlanError as e:
        return die(str(e))


if __name__ == "__main__":
    sys.exit(main())
