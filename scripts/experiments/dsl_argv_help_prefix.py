"""Experiment: the CuTe DSL reads ``sys.argv`` during every compile, and ``--h`` means ``--help``.

nvidia-cutlass-dsl 4.8.1 parses ``sys.argv`` for its own ``-diagnostic`` flag on every compile
(``cutlass/base_dsl/dsl.py``: ``_get_diagnostic_arg_parser`` builds a plain
``argparse.ArgumentParser``, with the default ``-h/--help`` and prefix matching on;
``diagnostic()`` calls its ``parse_known_args()`` from ``compile_and_jit``). A user script that
takes ``--h`` (query heads) therefore stops inside ``cute.compile``: argparse expands ``--h`` to
``--help``, prints the DSL's usage and calls ``sys.exit(0)``.

This script compiles a trivial ``@cute.jit`` function for sm_90a (``CUTE_DSL_ARCH``, no GPU
needed) in a fresh child process per command line (this file, run again with
DSL_ARGV_CHILD=1) and reports, for each: the exit status, whether the line after
``cute.compile`` was reached, and the first line the child printed.

    uv run python scripts/experiments/dsl_argv_help_prefix.py [--record]

With ``--record`` it also writes one result record (package "experiments", kernel
"dsl-argv-help-prefix") holding each case's command line, exit status and outcome.
"""

import os
import re
import subprocess
import sys

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def child(argv: list[str]) -> None:
    """The user script: its own command line is ``argv``; it compiles one function."""
    hide = argv[:1] == ["HIDE"]
    if hide:
        argv = argv[1:]
    sys.argv = [sys.argv[0], *argv]

    import cutlass
    import cutlass.cute as cute

    @cute.jit
    def add_one(x: cutlass.Int32):
        y = x + 1  # noqa: F841  (the DSL parses sys.argv before it lowers anything)

    if hide:  # the fix of kernelplan.cli._argv_hidden: the DSL sees the program name only
        saved, sys.argv = sys.argv, sys.argv[:1]
        try:
            cute.compile(add_one, cutlass.Int32(1))
        finally:
            sys.argv = saved
    else:
        cute.compile(add_one, cutlass.Int32(1))
    print("REACHED: the line after cute.compile")


CASES = [
    ("no flags", []),
    ("--h 16 (query heads)", ["--h", "16"]),
    ("--he 16", ["--he", "16"]),
    ("-h", ["-h"]),
    ("--h=16", ["--h=16"]),
    ("--heads 16", ["--heads", "16"]),
    ("--h 16 with sys.argv hidden during compile", ["HIDE", "--h", "16"]),
]


def main() -> int:
    env = dict(os.environ, CUTE_DSL_ARCH="sm_90a", DSL_ARGV_CHILD="1")
    print(f"python {sys.version.split()[0]}; CUTE_DSL_ARCH=sm_90a")
    try:
        from importlib.metadata import version

        print(f"nvidia-cutlass-dsl {version('nvidia-cutlass-dsl')}")
    except Exception as e:  # pragma: no cover - reporting only
        print(f"nvidia-cutlass-dsl version unknown: {e}")
    print()
    print("| argv | exit | reached after compile | first line printed |")
    print("|---|---|---|---|")
    bad = 0
    cases = []
    for name, argv in CASES:
        p = subprocess.run(
            [sys.executable, __file__, *argv],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        out = ANSI.sub("", p.stdout + p.stderr).strip().splitlines()
        reached = any(line.startswith("REACHED") for line in out)
        first = next((line for line in out if line.strip()), "")
        print(f"| {name} | {p.returncode} | {'yes' if reached else 'no'} | `{first[:90]}` |")
        cases.append(
            {
                "case": name,
                "argv": [a for a in argv if a != "HIDE"],
                "argv_hidden_during_compile": argv[:1] == ["HIDE"],
                "exit_status": p.returncode,
                "reached_after_compile": reached,
                "first_line": first,
            }
        )
        if name.startswith("--h 16 (") and (p.returncode != 0 or reached):
            bad += 1  # the trap did not reproduce
    print()
    print("full output of the '--h 16' child:")
    p = subprocess.run(
        [sys.executable, __file__, "--h", "16"], env=env, capture_output=True, text=True
    )
    print(ANSI.sub("", p.stdout + p.stderr), end="")
    print(f"[exit status {p.returncode}]")
    if "--record" in sys.argv[1:]:
        from pathlib import Path

        sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
        from kernelplan.records import write_experiment

        path = write_experiment(
            "dsl-argv-help-prefix",
            "scripts/experiments/dsl_argv_help_prefix.py",
            {"CUTE_DSL_ARCH": "sm_90a"},
            {"cases": cases, "trap_reproduced": bad == 0},
            device={"name": "cpu", "cute_dsl_arch": "sm_90a"},
        )
        print(f"record: {path}")
    return 1 if bad else 0


if __name__ == "__main__":
    if os.environ.get("DSL_ARGV_CHILD") == "1":
        child(sys.argv[1:])
    else:
        raise SystemExit(main())
