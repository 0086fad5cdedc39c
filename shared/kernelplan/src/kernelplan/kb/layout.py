"""Where the knowledge base, the results, the packages and the CUTLASS sources live."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kernelplan.errors import KernelPlanError

MANIFEST_NAME = "cutlass-manifest.json"
CATALOG_NAME = "CATALOG.md"
EXAMPLES_NAME = "EXAMPLES.md"
CUTLASS_SUBMODULE = "third_party/cutlass"


@dataclass(frozen=True)
class Layout:
    root: Path

    @property
    def knowledge(self) -> Path:
        return self.root / "knowledge"

    @property
    def results(self) -> Path:
        return self.root / "results"

    @property
    def packages(self) -> Path:
        return self.root / "packages"

    @property
    def manifest(self) -> Path:
        return self.knowledge / MANIFEST_NAME

    @property
    def catalog(self) -> Path:
        return self.knowledge / CATALOG_NAME

    @property
    def examples_catalog(self) -> Path:
        return self.knowledge / EXAMPLES_NAME

    @property
    def cutlass(self) -> Path:
        env = os.environ.get("CUTLASS_DIR")
        return Path(env) if env else self.root / CUTLASS_SUBMODULE

    def rel(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return path.as_posix()


def find_root(start: Path | None = None) -> Path:
    """The repository root: the nearest folder at or above `start` (default: the current
    folder) that holds both knowledge/ and pyproject.toml."""
    here = (start or Path.cwd()).resolve()
    for cand in (here, *here.parents):
        if (cand / "knowledge").is_dir() and (cand / "pyproject.toml").is_file():
            return cand
    # An editable install: <root>/shared/kernelplan/src/kernelplan/kb/layout.py.
    guess = Path(__file__).resolve().parents[5]
    if (guess / "knowledge").is_dir() and (guess / "pyproject.toml").is_file():
        return guess
    raise KernelPlanError(
        "cannot find the repository root (a folder with knowledge/ and pyproject.toml): "
        "run from inside the repository or pass --root"
    )


def git(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes | None:
    """Output of a git command, or None when git is missing or the command fails."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(cwd), *args],
            input=stdin,
            capture_output=True,
            check=False,
        )
    except OSError:
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout


def tracked_files(root: Path, under: str) -> set[str] | None:
    """Paths under `under` that git tracks (committed or staged), or None outside a work tree."""
    out = git(root, "ls-files", "-z", "--", under)
    if out is None:
        return None
    inside = git(root, "rev-parse", "--show-prefix")
    if inside is None or inside.strip():
        # `root` is not the top of its work tree (for instance a test folder inside a repo).
        return None
    return {p for p in out.decode("utf-8", "replace").split("\0") if p}


def pinned_commit(root: Path) -> str | None:
    """The commit that the superproject pins third_party/cutlass at (from the index)."""
    out = git(root, "ls-files", "-s", "--", CUTLASS_SUBMODULE)
    if not out:
        return None
    fields = out.decode().split()
    if len(fields) >= 2 and fields[0] == "160000":
        return fields[1]
    return None
