"""Run a job file of mla_decode_sm90 device jobs in ONE Python process (the DSL imported once,
each kernel compiled once), each job's output in its own log.

    python3 scripts/device/jobs.py LOGDIR JOBFILE [--dry] [--tail N]

JOBFILE lines are ``NAME KIND ARGS...`` (blank lines and ``#`` comments skipped), KIND one of

* ``kernel``: ``python -m cute_mla mla_decode_sm90 ARGS``;
* ``session``: ``python -m kernelplan ARGS``;
* ``alternate``: ``python -m kernelplan.alternate ARGS``;
* ``fp8alt``: ``python scripts/device/mla_sm90_fp8_alt.py ARGS``.

Each job writes ``LOGDIR/NAME.log``; ``LOGDIR/summary.txt`` gets one line per job, its rc and a
verdict against the rc it should have: 2 for a job whose name ends in ``-refused`` (a refusal
in one line), 1 for an ``--inject-fault`` job (a planted fault must FAIL; 0 with ``--dry``), 0
otherwise. The exit status is 1 when any job is not as expected.

``--dry`` (any machine, no GPU): a kernel job's flags and config parsed as the device would
(problem, config, ``supports()``, ``supports_config()``; a ``ShapeError`` is rc 2), an
alternate job's specs up to the GPU check (there, rc 2 with "needs a CUDA GPU; none is visible"
counts as rc 0, any other answer as rc 1), an fp8alt job's entries built (its ``--dry``);
session jobs are not run (rc 0). Nothing is compiled or run.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
import traceback
from collections.abc import Sequence

PACKAGE, KERNEL = "mla", "mla_decode_sm90"
KINDS = ("kernel", "session", "alternate", "fp8alt")
#: the answer an alternate job's dry run must end with on a host without a GPU
NO_GPU = "needs a CUDA GPU; none is visible"


def read_jobs(path: str) -> list[tuple[str, str, list[str]]]:
    """(name, kind, args) of each job line."""
    jobs = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                name, kind, *args = shlex.split(line)
                jobs.append((name, kind, args))
    return jobs


def expected_rc(name: str, args: Sequence[str], dry: bool) -> int:
    """2 for a refusal job (``*-refused``), 1 for a planted fault (not in a dry run), else 0."""
    if name.endswith("-refused"):
        return 2
    return 1 if ("--inject-fault" in args and not dry) else 0


def dry_kernel(args: Sequence[str]) -> int:
    """What the device would build for a kernel job: problem, config, supports()."""
    from kernelplan import ShapeError
    from kernelplan.cli import parse
    from kernelplan.registry import load_plan_class

    plan = load_plan_class(PACKAGE, KERNEL)()
    try:
        problem, items, _run = parse(plan, list(args))
        cfg = plan.config(problem, items)
        plan.supports(problem)
        plan.supports_config(problem, cfg)
    except ShapeError as e:  # what the CLI answers with rc 2
        print(f"error: {e}")
        return 2
    print(f"ok {problem.label()} {cfg.to_dict()}")
    return 0


def dry_alternate(args: Sequence[str]) -> int:
    """The table's specs parsed and their configs checked; stops at the GPU check."""
    from kernelplan import alternate

    alternate.devmod.current_device = lambda: None
    return alternate.main([*args, "--no-record"])


def run_job(kind: str, args: Sequence[str], dry: bool):
    """The job's rc (what its command line would exit with)."""
    args = list(args)
    if kind not in KINDS:
        print(f"error: unknown job kind {kind!r} (one of {', '.join(KINDS)})")
        return 2
    if kind == "fp8alt":
        here = os.path.dirname(os.path.abspath(__file__))
        if here not in sys.path:
            sys.path.insert(0, here)
        import mla_sm90_fp8_alt

        return mla_sm90_fp8_alt.main(args + ["--dry"] if dry else args)
    if dry:
        if kind == "kernel":
            return dry_kernel(args)
        return dry_alternate(args) if kind == "alternate" else 0
    if kind == "kernel":
        from kernelplan.cli import package_main

        return package_main(PACKAGE, [KERNEL, *args])
    if kind == "alternate":
        from kernelplan import alternate

        return alternate.main(args)
    from kernelplan.sessions import main as session_main

    return session_main(args)


def run_logged(log_path: str, kind: str, args: Sequence[str], dry: bool):
    """run_job with this process's stdout and stderr (file descriptors 1 and 2, so that
    subprocesses and the DSL's own output land there too) sent to ``log_path``."""
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    so, se = os.dup(1), os.dup(2)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    try:
        print("$", kind, " ".join(args), flush=True)
        rc = run_job(kind, args, dry)
    except SystemExit as e:
        rc = e.code
    except BaseException:
        traceback.print_exc()
        rc = "exc"
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(so, 1)
        os.dup2(se, 2)
        for x in (fd, so, se):
            os.close(x)
    return rc


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="jobs.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("logdir")
    ap.add_argument("jobfile")
    ap.add_argument("--dry", action="store_true", help="parse every job; compile and run nothing")
    ap.add_argument("--tail", type=int, default=10, help="log lines echoed per job (default 10)")
    a = ap.parse_args(argv)
    bad = 0
    with open(os.path.join(a.logdir, "summary.txt"), "a") as summary:
        for name, kind, args in read_jobs(a.jobfile):
            t0 = time.time()
            log_path = os.path.join(a.logdir, name + ".log")
            rc = run_logged(log_path, kind, args, a.dry)
            with open(log_path) as f:
                text = f.read()
            if a.dry and kind == "alternate":  # any other refusal (a bad spec) is a failure
                rc = 0 if rc == 2 and NO_GPU in text else 1
            want = expected_rc(name, args, a.dry)
            verdict = "as expected" if rc == want else f"UNEXPECTED (want rc={want})"
            bad += rc != want
            msg = f"{name}: rc={rc} {verdict} {time.time() - t0:.1f}s"
            print(msg, flush=True)
            summary.write(msg + "\n")
            summary.flush()
            keep = ("|", "PASS", "FAIL", "rror")
            tail = [
                l for l in text.splitlines() if any(k in l for k in keep) or l.startswith("ok ")
            ]
            for l in tail[-a.tail :] if a.tail > 0 else []:
                print("   ", l[:300], flush=True)
        print(f"{bad} job(s) not as expected", flush=True)
        summary.write(f"{bad} job(s) not as expected\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
