"""Build the knowledge base, its catalogs and the result reports into a static site.

    python docs/build.py [--out DIR]        (default: docs/_build/html; `nox -s docs` runs it)

Sphinx reads a staging folder beside the output (docs/_build/src) that mirrors the
repository's own layout: copies of knowledge/, results/ and README.md (copies, not links: MyST
resolves a linked file by its real path) plus the site's own pages (docs/index.md,
docs/results.md). So every relative link written for GitHub (`../results/...json`,
`reading/x.md#section`) resolves in the site exactly as it does in the repository. The sources
themselves are not rewritten; the site-only additions (links on source citations and path
names, a devlog's report plots) are made while Sphinx reads each page (docs/conf.py).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
BUILD = DOCS / "_build"
COPIED = ("knowledge", "results", "README.md")
PAGES = ("index.md", "results.md")  # the site's own pages, in docs/


def stage(src: Path) -> Path:
    """(Re)create the staging folder: the front page and links to the repository's content."""
    if src.is_symlink() or src.is_file():
        src.unlink()
    elif src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    for page in PAGES:
        shutil.copyfile(DOCS / page, src / page)
    for name in COPIED:
        target = ROOT / name
        if target.is_dir():
            shutil.copytree(target, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif target.is_file():
            shutil.copyfile(target, src / name)
    return src


def build(out: Path, src: Path | None = None, quiet: bool = True) -> int:
    src = stage(src or out.parent / "src")
    cmd = [
        sys.executable,
        "-m",
        "sphinx",
        "-b",
        "html",
        "-c",
        str(DOCS),
        "-d",
        str(out.parent / ".doctrees"),
        str(src),
        str(out),
    ]
    if quiet:
        cmd.append("-q")
    return subprocess.run(cmd, cwd=ROOT, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=BUILD / "html", help="output folder")
    p.add_argument("--verbose", action="store_true", help="Sphinx's progress output")
    args = p.parse_args(argv)
    out = args.out.resolve()
    rc = build(out, quiet=not args.verbose)
    if rc == 0:
        print(f"site: {out / 'index.html'}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
