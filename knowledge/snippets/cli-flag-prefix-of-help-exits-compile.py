"""A program flag that is a prefix of `--help` (`--h 16`) exits 0 inside `cute.compile`; hiding
sys.argv from the DSL while it compiles avoids it (generic: host code plus a trivial @cute.jit).

`user_program` below is the program of the entry: it parses its own flags (accepting `--h 16`)
and then compiles a one-line `@cute.jit` function, either as is (WRONG) or inside
`argv_hidden_from_dsl()` (RIGHT). compile_snippet() (CPU, CUTE_DSL_ARCH set) and check() (GPU)
run it in a fresh child process per case, with the real command line `--h 16`, because the DSL
reads `sys.argv`, not the list the program parsed; they assert that the WRONG child exits 0
without reaching the line after `cute.compile` (the trap), and that the RIGHT child reaches it.

This restates the logic of scripts/experiments/dsl_argv_help_prefix.py minimally instead of
importing it: that script is not importable as a module (scripts/experiments is no package
and not on sys.path), and the child here must run the shown fix itself.

Shown in knowledge/languages/cute-dsl/anti-patterns/cli-flag-prefix-of-help-exits-compile.md.
"""

import argparse
import contextlib
import os
import subprocess
import sys

SM = "generic"
EXPECT = "pass"
TIMEOUT_S = 300

REACHED = "REACHED: the line after cute.compile"
CHILD_ENV = "KB_SNIPPET_ARGV_CHILD"  # "wrong" or "right": run user_program in this process

# snippet:begin


@contextlib.contextmanager
def argv_hidden_from_dsl():
    """Show the DSL only the program name while it compiles (our flags are parsed already)."""
    saved = sys.argv
    sys.argv = saved[:1]
    try:
        yield
    finally:
        sys.argv = saved


def user_program(hide_argv: bool) -> None:
    import cutlass
    import cutlass.cute as cute

    parser = argparse.ArgumentParser()
    parser.add_argument("--h", type=int, default=8, help="query heads")
    args = parser.parse_args()  # accepts --h 16

    @cute.jit
    def add_heads(x: cutlass.Int32):
        y = x + args.h  # noqa: F841

    if hide_argv:  # RIGHT: parse first, then compile (and run) with sys.argv = [program]
        with argv_hidden_from_dsl():
            cute.compile(add_heads, cutlass.Int32(1))
    else:  # WRONG: the DSL re-parses ["--h", "16"] here, prints its usage and exits 0
        cute.compile(add_heads, cutlass.Int32(1))
    print(REACHED, flush=True)


# (or name the flag so that it is no prefix of --help: --heads, --num_heads, --h_q)
# snippet:end


def _run_child(mode: str, argv: list[str]) -> tuple[int, bool, str]:
    """This file as the user's script, command line `argv`: (exit status, reached, output)."""
    env = dict(os.environ, **{CHILD_ENV: mode})
    p = subprocess.run(
        [sys.executable, os.path.abspath(__file__), *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = p.stdout + p.stderr
    return p.returncode, REACHED in out, out


def _trap_and_fix() -> str:
    rc, reached, out = _run_child("wrong", ["--h", "16"])
    assert rc == 0 and not reached, (
        f"trap not reproduced: exit {rc}, reached {reached}\n{out[-2000:]}"
    )
    assert "-diagnostic" in out, f"the DSL's usage was not printed:\n{out[-2000:]}"
    rc_fix, reached_fix, out_fix = _run_child("right", ["--h", "16"])
    assert rc_fix == 0 and reached_fix, f"fix failed: exit {rc_fix}\n{out_fix[-2000:]}"
    return (
        f"--h 16: exit {rc} before the line after cute.compile (DSL usage printed); "
        f"sys.argv hidden: exit {rc_fix}, reached"
    )


def compile_snippet():
    """CPU (CUTE_DSL_ARCH set by the runner, inherited by the children): trap and fix."""
    return _trap_and_fix()


def check():
    """GPU: the same two children, compiling for the device's own arch."""
    return _trap_and_fix()


if __name__ == "__main__" and os.environ.get(CHILD_ENV) in ("wrong", "right"):
    user_program(hide_argv=os.environ[CHILD_ENV] == "right")
