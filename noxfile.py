"""Nox sessions for learn-cute-dsl.

    uv run nox -s lint                 ruff check + ruff format --check
    uv run nox -s tests                pytest on the CPU (GPU tests skip, with the reason)
    uv run nox -s check-gemm           check every gemm kernel (static part where no GPU fits)
    uv run nox -s profile -- gemm [kernel] [--autotune]
    uv run nox -s analyze -- gemm [kernel]

Sessions run inside the uv workspace environment (``uv sync`` once; nox reuses ``.venv``),
so the DSL and torch are installed once per machine, not once per session.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nox

nox.options.default_venv_backend = "none"
nox.options.sessions = ["lint", "tests", "kb"]

ROOT = Path(__file__).parent
PY = str(ROOT / ".venv" / "bin" / "python")
PACKAGES = sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").exists())


def _sync(session: nox.Session) -> None:
    session.run("uv", "sync", "--all-packages", "--frozen", external=True)


EXAMPLES = Path("examples/python/CuTeDSL")
GET_SOURCES = (
    "`git submodule update --init third_party/cutlass`, or set CUTLASS_DIR to a CUTLASS checkout"
)


def _has_examples(base: Path) -> bool:
    """``base`` is a CUTLASS checkout or its CuTeDSL examples folder (as kernelplan looks)."""
    return any((c / "cute").is_dir() for c in (base / EXAMPLES, base))


def _need_sources(session: nox.Session, *, required: bool = False) -> None:
    """Make the CUTLASS sources available where they can be: ``CUTLASS_DIR`` when set, else
    ``third_party/cutlass``, initialised when empty (git's output captured, not shown).

    Where they cannot be had (no network, or ``CUTLASS_DIR`` names a folder without them),
    a session that needs them (``required``: ``new``, ``kb-manifest``) ends with one line
    saying how to get them. The others go on: kernelplan skips the implementations that
    import a CUTLASS example, with one line, and runs the rest (our own kernels, the
    references, the peers)."""
    env = os.environ.get("CUTLASS_DIR")
    if env:
        if _has_examples(Path(env).expanduser()):
            return
        why = f"CUTLASS_DIR={env} holds no CUTLASS CuTe DSL examples"
    else:
        if _has_examples(ROOT / "third_party/cutlass"):
            return
        cmd = ["git", "submodule", "update", "--init", "third_party/cutlass"]
        try:
            r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
            lines = [ln.strip() for ln in (r.stderr + r.stdout).splitlines() if ln.strip()]
            fatal = [ln for ln in lines if ln.startswith(("fatal:", "error:"))]  # the cause
            detail = (fatal or lines or [f"exit {r.returncode}"])[0]
            ok = r.returncode == 0
        except (OSError, subprocess.SubprocessError) as e:
            ok, detail = False, f"{type(e).__name__}: {e}"
        if ok and _has_examples(ROOT / "third_party/cutlass"):
            session.log("CUTLASS sources: initialised third_party/cutlass")
            return
        why = f"CUTLASS sources absent (`{' '.join(cmd)}` failed: {detail[:160]})"
    if required:
        session.error(f"{why}: this session needs them: {GET_SOURCES}")
    session.log(f"{why}: what needs them is skipped")


def _known_packages(session: nox.Session, names: list[str]) -> None:
    """End the session with one line listing the packages when ``names`` holds another name
    (before any CUTLASS handling: an unknown package is the error to report)."""
    for name in names:
        if name not in PACKAGES:
            session.error(f"unknown package {name!r} (known: {', '.join(PACKAGES)})")


def _positionals(args: list[str], takes_value: set[str]) -> list[str]:
    """The positional arguments of ``args``, less the values of the options ``takes_value``."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in takes_value:
            skip = True
        elif not arg.startswith("-"):
            out.append(arg)
    return out


_PROFILE_VALUES = {"--reps", "--warmup", "--gpus", "--shard", "--results-dir", "--ncu-set",
                   "--ncu-clock-control", "--ncu-range", "--ncu-kernel", "--ncu-launches",
                   "--ncu-metrics", "--ncu-timeout"}  # fmt: skip


@nox.session
def lint(session: nox.Session) -> None:
    _sync(session)
    session.run(PY, "-m", "ruff", "check", ".", external=True)
    session.run(PY, "-m", "ruff", "format", "--check", ".", external=True)


@nox.session
def tests(session: nox.Session) -> None:
    _sync(session)
    session.run(PY, "-m", "pytest", *session.posargs, external=True)


def _make_check(pkg: str):
    @nox.session(name=f"check-{pkg}")
    def check(session: nox.Session) -> None:
        _sync(session)
        _need_sources(session)
        session.run(PY, "-m", "kernelplan", "check", pkg, *session.posargs, external=True)

    return check


for _pkg in PACKAGES:
    globals()[f"check_{_pkg.replace('-', '_')}"] = _make_check(_pkg)


def _requested_sessions(argv: list[str]) -> list[str]:
    """The session names given to nox (``-s/-e/--session/--sessions`` and ``NOXSESSION``)."""
    names: list[str] = []
    taking = False
    for arg in argv:
        if arg == "--":
            break
        if arg in ("-s", "-e", "--session", "--sessions"):
            taking = True
            continue
        for flag in ("--session=", "--sessions=", "-s=", "-e="):
            if arg.startswith(flag):
                names += arg[len(flag) :].split(",")
                break
        else:
            if taking and not arg.startswith("-"):
                names.append(arg)
                continue
        taking = False
    names += [n for n in os.environ.get("NOXSESSION", "").split(",") if n]
    return [n.strip() for n in names if n.strip()]


def _make_unknown_check(name: str):
    """``nox -s check-<not a package>``: the package command's own one-line error, which lists
    the packages (instead of nox's "Sessions not found"). Defined only when asked for, so
    ``nox -l`` lists the real packages alone."""

    @nox.session(name=name)
    def unknown(session: nox.Session) -> None:
        session.run(PY, "-m", "kernelplan", "check", name[len("check-") :], external=True)

    return unknown


for _name in _requested_sessions(sys.argv[1:]):
    if _name.startswith("check-") and _name[len("check-") :] not in PACKAGES:
        globals()[f"_unknown_{len(globals())}"] = _make_unknown_check(_name)


@nox.session
def profile(session: nox.Session) -> None:
    """``nox -s profile -- <package> [kernel] [--autotune] [--ncu]``"""
    if not session.posargs:
        session.error("usage: nox -s profile -- <package> [kernel] [--autotune]")
    _known_packages(session, _positionals(session.posargs, _PROFILE_VALUES)[:1])
    _sync(session)
    _need_sources(session)
    session.run(PY, "-m", "kernelplan", "profile", *session.posargs, external=True)


@nox.session
def analyze(session: nox.Session) -> None:
    """``nox -s analyze -- <package> [kernel]``: compile for each kernel's SM, no GPU needed."""
    if not session.posargs:
        session.error("usage: nox -s analyze -- <package> [kernel]")
    _known_packages(session, _positionals(session.posargs, {"--results-dir"})[:1])
    _sync(session)
    _need_sources(session)
    session.run(PY, "-m", "kernelplan", "analyze", *session.posargs, external=True)


@nox.session(name="gpu-ci")
def gpu_ci(session: nox.Session) -> None:
    """``nox -s gpu-ci -- [package ...] [--reps N] [--no-profile] [--results-dir DIR]``: on the
    machine it runs on, check every implementation whose target runs on its GPU, analyse the
    rest statically, profile the runnable ones briefly; a markdown summary under
    results/gpu-ci/<date>-<device>/ (kernelplan.gpuci). Exit 1 on any failure."""
    _known_packages(session, _positionals(session.posargs, {"--reps", "--warmup", "--results-dir"}))
    _sync(session)
    _need_sources(session)
    session.run(PY, "-m", "kernelplan.gpuci", *session.posargs, external=True)


@nox.session
def compare(session: nox.Session) -> None:
    """``nox -s compare -- <package> <kernel A> <kernel B> [--problem m=8192 ...]`` or
    ``-- <record A.json> <record B.json>``: the comparison table (markdown) from the newest
    ncu and benchmark records."""
    if len(session.posargs) < 2:
        session.error(
            "usage: nox -s compare -- <package> <kernel A> <kernel B> [--problem k=v ...] "
            "| -- <record A.json> <record B.json>"
        )
    _sync(session)
    session.run(PY, "-m", "kernelplan.report", "compare", *session.posargs, external=True)


@nox.session
def report(session: nox.Session) -> None:
    """``nox -s report -- <package>``: markdown tables and PNG plots (roofline, sweeps) of the
    package's records under results/<package>/report/."""
    if not session.posargs:
        session.error("usage: nox -s report -- <package> [--out DIR]")
    _sync(session)
    session.run(PY, "-m", "kernelplan.report", "report", *session.posargs, external=True)


@nox.session
def kb(session: nox.Session) -> None:
    """Lint the knowledge base; outside CI, regenerate the catalogs first."""
    if not os.environ.get("CI"):
        session.run(PY, "-m", "kernelplan.kb", "catalog", external=True)
    session.run(PY, "-m", "kernelplan.kb", "lint", *session.posargs, external=True)


@nox.session
def docs(session: nox.Session) -> None:
    """The knowledge base, catalogs and result reports as a static site (Sphinx + MyST) in
    docs/_build/html, then checked in headless chromium (tests/test_docs.py: pages render, no
    internal link broken, search finds the pipeline pattern; screenshots in
    docs/_build/screenshots)."""
    _sync(session)
    session.run(PY, "docs/build.py", external=True)
    site = ROOT / "docs" / "_build"
    env = {"KB_SITE_DIR": str(site / "html"), "KB_SITE_SCREENSHOTS": str(site / "screenshots")}
    session.run(PY, "-m", "pytest", "tests/test_docs.py", "-q", env=env, external=True)


@nox.session
def catalog(session: nox.Session) -> None:
    """The SELECT step: regenerate knowledge/EXAMPLES.md (and knowledge/CATALOG.md)."""
    session.run(PY, "-m", "kernelplan.kb", "catalog", external=True)


@nox.session(name="kb-manifest")
def kb_manifest(session: nox.Session) -> None:
    """After a CUTLASS pin bump: rewrite the manifest, then check it against the sources."""
    _need_sources(session, required=True)
    session.run(PY, "-m", "kernelplan.kb", "manifest", external=True)
    session.run(PY, "-m", "kernelplan.kb", "lint", "--verify-sources", external=True)


@nox.session
def new(session: nox.Session) -> None:
    """``nox -s new -- <package> <kernel> --from <path under examples/python/CuTeDSL>``: scaffold
    an imported example (adapter, ``__main__``, test, devlog stub; the package when it is new)."""
    if not session.posargs:
        session.error("usage: nox -s new -- <package> <kernel> --from <example path>")
    _sync(session)
    _need_sources(session, required=True)
    session.run(
        PY, "-m", "kernelplan.scaffold", "--root", str(ROOT), *session.posargs, external=True
    )
    _sync(session)  # installs a new package: the scaffold has run `uv lock`
