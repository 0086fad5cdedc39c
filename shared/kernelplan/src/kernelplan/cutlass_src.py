"""Where the pinned CUTLASS sources are, and how to import one of its CuTe DSL examples.

The project pins NVIDIA/cutlass as the git submodule ``third_party/cutlass``; the examples
live under ``examples/python/CuTeDSL``. ``CUTLASS_DIR`` overrides the location (a CUTLASS
checkout, or a copy of just its ``examples/python/CuTeDSL`` tree, as carried to a GPU host).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import threading
from pathlib import Path
from types import ModuleType

from .errors import KernelPlanError

#: The CUTLASS commit every adapter, reading note and record refers to. Verified against
#: nvidia-cutlass-dsl 4.8.1 (every example compiles for its own SM; see the example catalog).
PINNED_COMMIT = "7107b05535f8977f5ecb9d01ee203205b1fd9bc4"
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
        got = source_commit()
        if got and got != PINNED_COMMIT:
            print(
                f"warning: CUTLASS sources at {got[:9]}, the project pins {PINNED_COMMIT[:9]}: "
                "results may differ from the committed records (git -C third_party/cutlass "
                f"checkout {PINNED_COMMIT[:9]})",
                file=sys.stderr,
            )
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
