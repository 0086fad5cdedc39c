"""Command line: python -m kernelplan.kb {lint,catalog,examples,manifest,new}."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from kernelplan.errors import KernelPlanError

from . import catalog
from . import manifest as manifest_mod
from .layout import Layout, find_root
from .lint import lint
from .templates import DEVLOG_TEMPLATE, PATTERN_TEMPLATE, READING_TEMPLATE


def _layout(args: argparse.Namespace) -> Layout:
    if args.cutlass_dir:
        os.environ["CUTLASS_DIR"] = str(Path(args.cutlass_dir).resolve())
    return Layout(Path(args.root).resolve() if args.root else find_root())


def _manifest_or_fail(layout: Layout) -> dict:
    data = manifest_mod.load(layout)
    if data is None:
        raise KernelPlanError(
            f"{layout.rel(layout.manifest)} is missing: run `python -m kernelplan.kb manifest` "
            "(needs the CUTLASS sources)"
        )
    return data


def cmd_lint(args: argparse.Namespace) -> int:
    layout = _layout(args)
    defects = lint(layout, verify_sources=args.verify_sources)
    errors = [d for d in defects if d.severity == "error"]
    warnings = [d for d in defects if d.severity == "warning"]
    for d in defects:
        if d.severity == "error" or not args.quiet:
            print(d)
    failed = bool(errors) or (args.strict and bool(warnings))
    verdict = "FAILED" if failed else "ok"
    print(f"kb lint: {len(errors)} errors, {len(warnings)} warnings: {verdict}", file=sys.stderr)
    return 1 if failed else 0


def cmd_catalog(args: argparse.Namespace) -> int:
    layout = _layout(args)
    man = _manifest_or_fail(layout)
    if args.check:
        stale = []
        for rel, text in catalog.render(layout, man).items():
            path = layout.root / rel
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(rel)
        for rel in stale:
            print(f"{rel}:1: stale catalog: run `python -m kernelplan.kb catalog`")
        return 1 if stale else 0
    for rel in catalog.write(layout, man):
        print(f"wrote {rel}")
    return 0


def cmd_examples(args: argparse.Namespace) -> int:
    layout = _layout(args)
    man = _manifest_or_fail(layout)
    text = catalog.Catalogs(layout, man).examples_catalog()
    if args.stdout:
        sys.stdout.write(text)
        return 0
    layout.examples_catalog.parent.mkdir(parents=True, exist_ok=True)
    layout.examples_catalog.write_text(text, encoding="utf-8")
    print(f"wrote {layout.rel(layout.examples_catalog)}")
    return 0


def cmd_manifest(args: argparse.Namespace) -> int:
    layout = _layout(args)
    fresh = manifest_mod.build(layout, args.commit)
    if args.check:
        committed = manifest_mod.load(layout)
        if committed is None:
            print(
                f"{layout.rel(layout.manifest)}:1: missing: run `python -m kernelplan.kb manifest`"
            )
            return 1
        diffs = manifest_mod.compare(committed, fresh)
        for diff in diffs:
            print(f"{layout.rel(layout.manifest)}:1: {diff}")
        return 1 if diffs else 0
    path = manifest_mod.write(layout, fresh)
    n_py = len(fresh["python"])
    print(
        f"wrote {layout.rel(path)}: CUTLASS {fresh['commit']}, {len(fresh['files'])} files "
        f"({n_py} .py), read from {fresh['_read_from']}"
    )
    return 0


NEW_KINDS = ("pattern", "anti-pattern", "reading", "devlog")


def cmd_new(args: argparse.Namespace) -> int:
    layout = _layout(args)
    slug = re.sub(r"[^a-z0-9]+", "-", args.name.casefold()).strip("-")
    if not slug:
        raise KernelPlanError("give the new entry a name made of letters or digits")
    if args.kind in ("pattern", "anti-pattern"):
        sub = "optimizations" if args.kind == "pattern" else "anti-patterns"
        folder = sub if args.shared else f"languages/{args.lang}/{sub}"
        text = PATTERN_TEMPLATE.replace("[Pattern name]", args.name)
    elif args.kind == "reading":
        if not args.example:
            raise KernelPlanError(
                "a reading note needs --example <path under examples/python/CuTeDSL>"
            )
        man = manifest_mod.load(layout) or {}
        folder = "reading"
        text = READING_TEMPLATE.format(
            example=args.example, commit=(man.get("commit") or "unknown")[:9]
        ).replace("[example name]", args.name)
    else:
        if not args.example or not args.imported:
            raise KernelPlanError(
                "a devlog needs --example <path under examples/python/CuTeDSL> and "
                "--imported <packages/... folder>"
            )
        folder = "kernels"
        text = DEVLOG_TEMPLATE.format(
            kernel=args.name, example=args.example, imported=args.imported
        )
    path = layout.knowledge / folder / f"{slug}.md"
    if path.exists():
        raise KernelPlanError(f"{layout.rel(path)} already exists: choose another name")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"wrote {layout.rel(path)}: fill it in, then run `python -m kernelplan.kb catalog`")
    return 0


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", help="repository root (default: found from the current folder)")
    common.add_argument(
        "--cutlass-dir",
        help="CUTLASS checkout (default: $CUTLASS_DIR, else third_party/cutlass)",
    )
    p = argparse.ArgumentParser(
        prog="python -m kernelplan.kb",
        description="Knowledge-base tooling: lint, catalogs, CUTLASS manifest, templates.",
    )
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser(
        "lint", parents=[common], help="check every knowledge file; exit 1 on defects"
    )
    s.add_argument(
        "--verify-sources",
        action="store_true",
        help="also check the manifest against the CUTLASS sources when they are present",
    )
    s.add_argument("--strict", action="store_true", help="warnings (pending evidence) fail too")
    s.add_argument("-q", "--quiet", action="store_true", help="print errors only")
    s.set_defaults(func=cmd_lint)

    s = sub.add_parser(
        "catalog",
        parents=[common],
        help="regenerate knowledge/CATALOG.md and knowledge/EXAMPLES.md",
    )
    s.add_argument("--check", action="store_true", help="write nothing; exit 1 when stale")
    s.set_defaults(func=cmd_catalog)

    s = sub.add_parser("examples", parents=[common], help="regenerate knowledge/EXAMPLES.md only")
    s.add_argument("--stdout", action="store_true", help="print it instead of writing it")
    s.set_defaults(func=cmd_examples)

    s = sub.add_parser(
        "manifest", parents=[common], help="write knowledge/cutlass-manifest.json from the sources"
    )
    s.add_argument("--commit", help="CUTLASS commit (default: the submodule pin)")
    s.add_argument("--check", action="store_true", help="write nothing; exit 1 when it differs")
    s.set_defaults(func=cmd_manifest)

    s = sub.add_parser("new", parents=[common], help="start a knowledge file from its template")
    s.add_argument("kind", choices=NEW_KINDS)
    s.add_argument("name", help="title; the file name is made from it")
    s.add_argument("--shared", action="store_true", help="shared (not language-specific) pattern")
    s.add_argument("--lang", default="cute-dsl", help="language folder (default cute-dsl)")
    s.add_argument("--example", help="example path under examples/python/CuTeDSL")
    s.add_argument("--imported", help="devlog: the imported package folder")
    s.set_defaults(func=cmd_new)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KernelPlanError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
