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


def _need_sources(session: nox.Session) -> None:
    """Init the CUTLASS submodule when it is empty and CUTLASS_DIR is not set."""
    if os.environ.get("CUTLASS_DIR"):
        return
    if not (ROOT / "third_party/cutlass/examples/python/CuTeDSL").is_dir():
        r = subprocess.run(
            ["git", "submodule", "update", "--init", "third_party/cutlass"], cwd=ROOT
        )
        if r.returncode:
            session.error(
                "CUTLASS sources missing and `git submodule update --init "
                "third_party/cutlass` failed: set CUTLASS_DIR to a CUTLASS checkout"
            )


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
    _sync(session)
    _need_sources(session)
    session.run(PY, "-m", "kernelplan", "profile", *session.posargs, external=True)


@nox.session
def analyze(session: nox.Session) -> None:
    """``nox -s analyze -- <package> [kernel]``: compile for each kernel's SM, no GPU needed."""
    if not session.posargs:
        session.error("usage: nox -s analyze -- <package> [kernel]")
    _sync(session)
    _need_sources(session)
    session.run(PY, "-m", "kernelplan", "analyze", *session.posargs, external=True)


@nox.session(name="gpu-ci")
def gpu_ci(session: nox.Session) -> None:
    """``nox -s gpu-ci -- [package ...] [--reps N] [--no-profile] [--results-dir DIR]``: on the
    machine it runs on, check every implementation whose target runs on its GPU, analyse the
    rest statically, profile the runnable ones briefly; a markdown summary under
    results/gpu-ci/<date>-<device>/ (kernelplan.gpuci). Exit 1 on any failure."""
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
    _need_sources(session)
    session.run(PY, "-m", "kernelplan.kb", "manifest", external=True)
    session.run(PY, "-m", "kernelplan.kb", "lint", "--verify-sources", external=True)


@nox.session
def new(session: nox.Session) -> None:
    """``nox -s new -- <package> <kernel> --from <path under examples/python/CuTeDSL>``: scaffold
    an imported example (adapter, ``__main__``, test, devlog stub; the package when it is new)."""
    if not session.posargs:
        session.error("usage: nox -s new -- <package> <kernel> --from <example path>")
    _sync(session)
    _need_sources(session)
    session.run(
        PY, "-m", "kernelplan.scaffold", "--root", str(ROOT), *session.posargs, external=True
    )
    _sync(session)  # installs a new package: the scaffold has run `uv lock`
