"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/anti-patterns/cli-flag-prefix-of-help-exits-compile.md,
kept as it stands in the entry until it is
made real code (compiled for generic with fake tensors, and a check on the H200).
It is not imported or compiled: names it uses come from a surrounding kernel or harness
that the fragment leaves out.
"""

# ruff: noqa: F821, E402, F841, B018, SIM102

SM = "generic"
PENDING = "a fragment: its surrounding kernel is not written yet"

# snippet:begin
import contextlib
import sys


@contextlib.contextmanager
def argv_hidden_from_dsl():
    """Show the DSL only the program name while it compiles (our flags are parsed already)."""
    saved = sys.argv
    sys.argv = saved[:1]
    try:
        yield
    finally:
        sys.argv = saved


# WRONG: the DSL re-parses ["--h", "16", ...] inside cute.compile and exits 0
#   args = my_parser.parse_args()          # accepts --h 16
#   compiled = cute.compile(kernel, ...)   # prints "usage: ... -diagnostic ..." and exits 0

# RIGHT: parse first, then compile and run with sys.argv reduced to the program name
#   args = my_parser.parse_args()
#   with argv_hidden_from_dsl():
#       compiled = cute.compile(kernel, ...)
#       compiled(...)
# (or name the flag so that it is no prefix of --help: --heads, --num_heads, --h_q)
# snippet:end
