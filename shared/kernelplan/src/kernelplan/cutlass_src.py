"""The pinned CUTLASS: where its sources are, how to import one of its CuTe DSL examples,
and whether the installed CuTe DSL is the pinned one.

The project pins NVIDIA/cutlass as the git submodule ``third_party/cutlass``; the examples
live under ``examples/python/CuTeDSL``. ``CUTLASS_DIR`` overrides the location (a CUTLASS
checkout, or a copy of just its ``examples/python/CuTeDSL`` tree, as carried to a GPU host).
The CuTe DSL is pinned in ``shared/kernelplan/pyproject.toml`` (:data:`DSL_REQUIREMENT`).

Every command calls :func:`check_environment` before any work: no DSL (or NVIDIA's other
package, ``nvidia-cutlass``, in its place) is one ``error:`` line naming the package to
install; a DSL or CUTLASS sources other than the pins is one warning per command (whether the
results then come from the compile cache or not), and a failure that follows says which
differs (:func:`drift_note`, used by :func:`kernelplan.errors.explain`).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import threading
from pathlib import Path
from types import ModuleType

from .errors import DslMissing, KernelPlanError

#: The CUTLASS commit every adapter, reading note and record refers to. Verified against
#: nvidia-cutlass-dsl 4.8.1 (every example compiles for its own SM; see the example catalog).
PINNED_COMMIT = "7107b05535f8977f5ecb9d01ee203205b1fd9bc4"
#: The CuTe DSL distribution, its pinned version and the requirement to install (as in
#: shared/kernelplan/pyproject.toml; tests/test_bad_input.py checks that they agree).
DSL_DIST = "nvidia-cutlass-dsl"
PINNED_DSL = "4.8.1"
DSL_REQUIREMENT = f"{DSL_DIST}[cu13]=={PINNED_DSL}"
#: NVIDIA's other package: the CUTLASS C++ Python interface (``cutlass_cppgen``; up to 3.x a
#: module named ``cutlass`` of its own), not the CuTe DSL.
OTHER_CUTLASS_DIST = "nvidia-cutlass"
EXAMPLES_SUBDIR = Path("examples/python/CuTeDSL")
#: A file a copied example tree may carry to say which commit it came from (no .git there).
COMMIT_FILE = "CUTLASS_COMMIT"

_lock = threading.Lock()
_loaded: dict[str, ModuleType] = {}


class CutlassSourcesMissing(KernelPlanError):
    """The pinned CUTLASS example sources are not where the loader looks."""


def repo_root() -> Path:
    """The learn-cute-dsl checkout this package belongs to (or the current directory)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "third_party").is_dir() and (parent / "pyproject.toml").is_file():
            return parent
    return Path.cwd()


def examples_dir() -> Path:
    """The ``examples/python/CuTeDSL`` folder of the CUTLASS sources.

    Looks at ``$CUTLASS_DIR`` (a CUTLASS checkout or the CuTeDSL examples folder itself),
    then ``third_party/cutlass`` of this checkout.

    Raises:
        CutlassSourcesMissing: neither place holds the examples; the message says how to get them.
    """
    candidates: list[Path] = []
    env = os.environ.get("CUTLASS_DIR")
    if env:
        base = Path(env).expanduser()
        candidates += [base / EXAMPLES_SUBDIR, base]
    else:
        candidates.append(repo_root() / "third_party" / "cutlass" / EXAMPLES_SUBDIR)
    for c in candidates:
        if (c / "cute").is_dir():
            return c
    where = f"CUTLASS_DIR={env}" if env else "third_party/cutlass"
    raise CutlassSourcesMissing(
        f"CUTLASS CuTe DSL examples not found under {where}: run "
        "`git submodule update --init third_party/cutlass` or set CUTLASS_DIR to a CUTLASS "
        f"checkout at {PINNED_COMMIT[:9]}"
    )


def have_sources() -> bool:
    """True when :func:`examples_dir` would find the sources."""
    try:
        examples_dir()
    except CutlassSourcesMissing:
        return False
    return True


def source_commit() -> str | None:
    """The commit of the sources in use: ``git rev-parse HEAD``, or a ``CUTLASS_COMMIT`` file."""
    try:
        ex = examples_dir()
    except CutlassSourcesMissing:
        return None
    for d in (ex, *ex.parents[:4]):
        f = d / COMMIT_FILE
        if f.is_file():
            return f.read_text().strip()
    try:
        out = subprocess.run(
            ["git", "-C", str(ex), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def example_path(relpath: str) -> Path:
    """Absolute path of an example given its path under ``examples/python/CuTeDSL``.

    Raises:
        CutlassSourcesMissing: the sources are absent.
        KernelPlanError: the file does not exist at the sources in use.
    """
    p = examples_dir() / relpath
    if not p.is_file():
        raise KernelPlanError(
            f"{relpath} not found under {examples_dir()}: is the CUTLASS checkout at "
            f"{PINNED_COMMIT[:9]}? (`git -C third_party/cutlass checkout {PINNED_COMMIT[:9]}`)"
        )
    return p


def load_example(relpath: str) -> ModuleType:
    """Import a CuTe DSL example module by its path under ``examples/python/CuTeDSL``.

    The examples import their helpers relative to the CuTeDSL root (``helpers.fmha_helpers``,
    ``cute.blackwell...``), to ``cute/`` (``blackwell.kernel.reduce``), or to their own folder
    (``common_dense_gemm_efc``), and only add those to ``sys.path`` under ``__main__``; this
    loader puts all three on ``sys.path`` before importing. The module is imported once per
    process under a private name (``_cutlass_example_<hash>``), so its ``__main__`` block
    does not run.

    Raises:
        CutlassSourcesMissing: the sources are absent (the message says how to get them).
        KernelPlanError: the path does not exist at the sources in use.
    """
    path = example_path(relpath)
    with _lock:
        if relpath in _loaded:
            return _loaded[relpath]
        root = examples_dir()
        drift = sources_drift()
        if drift:
            warn_once(_sources_warning(drift))
        for d in (path.parent, root / "cute", root):
            s = str(d)
            if s not in sys.path:
                sys.path.insert(0, s)
        name = "_cutlass_example_" + hashlib.sha1(relpath.encode()).hexdigest()[:10]
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception:
            sys.modules.pop(name, None)
            raise
        _loaded[relpath] = module
        return module


def source_digest(relpath: str) -> str:
    """sha256 of the example file (part of compile-cache keys: an edited source misses)."""
    return hashlib.sha256(example_path(relpath).read_bytes()).hexdigest()


# -- the pins against what is installed -----------------------------------------------------
_warned: set[str] = set()
_warn_lock = threading.Lock()


def warn_once(msg: str) -> None:
    """``warning: msg`` on stderr, once per process (a command; forked workers inherit it)."""
    with _warn_lock:
        if msg in _warned:
            return
        _warned.add(msg)
    print(f"warning: {msg}", file=sys.stderr)


def _dist_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def dsl_version() -> str | None:
    """The installed nvidia-cutlass-dsl's version (from its metadata: no import), or None."""
    return _dist_version(DSL_DIST)


def _cutlass_module() -> str | None:
    """What ``import cutlass`` would find, without importing it: "dsl" (a package with the
    DSL's ``cute``/``base_dsl``), "other" (some other module named ``cutlass``) or None."""
    try:
        spec = importlib.util.find_spec("cutlass")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    for loc in spec.submodule_search_locations or ():
        if (Path(loc) / "cute").is_dir() or (Path(loc) / "base_dsl").is_dir():
            return "dsl"
    return "other"


def _install_hint() -> str:
    req = DSL_REQUIREMENT
    return f"install {req} (`uv sync` in the checkout, or `pip install '{req}'`)"


def dsl_problem() -> str | None:
    """Why the CuTe DSL cannot be imported, as one line saying what to install; None when
    ``import cutlass`` finds the DSL (its version is :func:`dsl_drift`'s business)."""
    module = _cutlass_module()
    if module == "dsl":
        return None
    other = _dist_version(OTHER_CUTLASS_DIST)
    if other or module == "other":
        what = f"{OTHER_CUTLASS_DIST} {other}" if other else "a module named `cutlass`"
        shadow = (
            f"; uninstall {OTHER_CUTLASS_DIST} first (its module `cutlass` hides the DSL's)"
            if module == "other"
            else ""
        )
        return (
            f"{what} is installed, NVIDIA's CUTLASS C++ Python interface, not the CuTe DSL this "
            f"project runs: {_install_hint()}{shadow}"
        )
    installed = dsl_version()
    if installed:
        return (
            f"{DSL_DIST} {installed} is installed but Python finds no `cutlass` module in it: "
            f"reinstall it, {_install_hint()}"
        )
    return f"the CuTe DSL is not installed (no {DSL_DIST}): {_install_hint()}"


def dsl_drift() -> str | None:
    """``"nvidia-cutlass-dsl 4.4.2 is installed, the project pins 4.8.1"``, or None."""
    got = dsl_version()
    if got is None or got == PINNED_DSL:
        return None
    return f"{DSL_DIST} {got} is installed, the project pins {PINNED_DSL}"


def _checkout_hint() -> str:
    env = os.environ.get("CUTLASS_DIR")
    where = env if env else "third_party/cutlass"
    return f"git -C {where} checkout {PINNED_COMMIT[:9]}"


def sources_drift() -> str | None:
    """``"the CUTLASS sources are at <commit>, the project pins 7107b0553"``, or None (at the
    pin, or the commit is unknown, or there are no sources)."""
    got = source_commit()
    if not got or got == PINNED_COMMIT:
        return None
    return f"the CUTLASS sources are at {got[:9]}, the project pins {PINNED_COMMIT[:9]}"


def _sources_warning(drift: str) -> str:
    return f"{drift}: results may differ from the committed records ({_checkout_hint()})"


def drift_note() -> str | None:
    """What differs from the pins and how to fix it, as a clause for an error line (the
    likely cause of a failure in upstream or adapter code), or None when nothing does."""
    parts = []
    dsl = dsl_drift()
    if dsl:
        parts.append(f"{dsl}: {_install_hint()}")
    src = sources_drift()
    if src:
        parts.append(f"{src}: {_checkout_hint()}")
    return "; ".join(parts) or None


def check_environment(*, need_dsl: bool = True) -> None:
    """Before a command does any work: refuse a missing CuTe DSL (with ``need_dsl``), and
    warn, once per command, about a DSL or CUTLASS sources other than the pins.

    Imports neither the DSL nor torch (a cached analysis needs neither).

    Raises:
        DslMissing: no DSL, or NVIDIA's ``nvidia-cutlass`` in its place (the message names
            the package and version to install).
    """
    if need_dsl:
        problem = dsl_problem()
        if problem:
            raise DslMissing(problem)
    dsl = dsl_drift()
    if dsl:
        warn_once(
            f"{dsl}: results may differ from the committed records (SASS counts, registers); "
            f"{_install_hint()}"
        )
    src = sources_drift()
    if src:
        warn_once(_sources_warning(src))
