"""Command line: python -m kernelplan.kb {lint,catalog,examples,manifest,new}."""

from __future__ import annotations

import argparse
import os
import re
import sys
import textwrap
from pathlib import Path

from kernelplan.errors import KernelPlanError

from . import catalog
from . import manifest as manifest_mod
from . import snippets as snippets_mod
from .layout import Layout, find_root
from .lint import lint
from .templates import DEVLOG_TEMPLATE, PATTERN_TEMPLATE, READING_TEMPLATE, SNIPPET_TEMPLATE


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
        for rel in snippets_mod.refresh(layout, check_only=True):
            print(f"{rel}:1: stale snippet block: run `python -m kernelplan.kb catalog`")
            stale.append(rel)
        for rel, text in catalog.render(layout, man).items():
            path = layout.root / rel
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(rel)
        for rel in stale:
            print(f"{rel}:1: stale catalog: run `python -m kernelplan.kb catalog`")
        return 1 if stale else 0
    for rel in snippets_mod.refresh(layout):
        print(f"refreshed the snippet blocks of {rel}")
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


def _selected(layout: Layout, paths: list[str]) -> list[snippets_mod.Snippet]:
    found = snippets_mod.all_snippets(layout)
    if not paths:
        return found
    out = []
    for p in paths:
        hits = [s for s in found if s.rel == p or s.rel.endswith("/" + p) or p in s.rel]
        if not hits:
            raise KernelPlanError(f"no snippet matches {p!r}")
        out += [h for h in hits if h not in out]
    return out


def cmd_snippets(args: argparse.Namespace) -> int:
    layout = _layout(args)
    if args.action == "exec":
        path = Path(args.paths[0]) if args.paths else None
        if path is None or len(args.paths) != 2 or args.paths[1] not in ("compile", "check"):
            raise KernelPlanError("usage: snippets exec <file> compile|check")
        return snippets_mod.exec_in_process(layout.root / path, args.paths[1])
    chosen = _selected(layout, args.paths)
    if args.action == "list":
        print("| snippet | SM | compiled in CI | runs on the H200 | expect |")
        print("|---|---|---|---|---|")
        for s in chosen:
            compiled = "yes" if s.compiles else (f"no: {s.pending}" if s.pending else "no")
            print(
                f"| `{s.rel}` | {s.sm} | {compiled} | {'yes' if s.runnable else 'no'} | "
                f"{s.expect if s.runnable else ''} |"
            )
        n_c = sum(s.compiles for s in chosen)
        n_r = sum(s.runnable for s in chosen)
        n_p = sum(s.pending is not None for s in chosen)
        print(f"\n{len(chosen)} snippets: {n_c} compiled in CI, {n_r} runnable, {n_p} pending")
        return 0
    what = "compile" if args.action == "compile" else "check"
    todo = [s for s in chosen if (s.compiles if what == "compile" else s.runnable)]
    skipped = [s for s in chosen if s not in todo]
    failed = 0
    for s in todo:
        limit = args.timeout or s.timeout_s or snippets_mod.DEFAULT_TIMEOUT_S
        if what == "compile":
            limit = args.timeout or 600
        o = snippets_mod.run_one(s, what, limit, layout.root)
        verdict = "ok" if o.as_expected else "UNEXPECTED"
        want = s.expect if what == "check" else "pass"
        arch = f" for {s.compile_arch}" if what == "compile" else ""
        print(
            f"{o.status:8s} {s.rel}{arch} ({o.seconds:.1f} s, limit {limit:g} s; "
            f"expected {want}: {verdict})",
            flush=True,
        )
        last = o.tail.splitlines()[-1] if o.tail else ""
        if o.as_expected and last and o.status == "pass":
            print(f"         {last}")
        if not o.as_expected:
            failed += 1
            print(textwrap.indent(o.tail, "         | "))
    for s in skipped:
        why = s.pending or (
            f"SM {s.sm} is not the H200's" if s.compiles and what == "check" else "not compiled"
        )
        print(f"skipped  {s.rel} ({why})")
    print(
        f"snippets {args.action}: {len(todo) - failed} as expected, {failed} not, "
        f"{len(skipped)} skipped",
        file=sys.stderr,
    )
    return 1 if failed else 0


NEW_KINDS = ("pattern", "anti-pattern", "reading", "devlog")


def cmd_new(args: argparse.Namespace) -> int:
    layout = _layout(args)
    slug = re.sub(r"[^a-z0-9]+", "-", args.name.casefold()).strip("-")
    if not slug:
        raise KernelPlanError("give the new entry a name made of letters or digits")
    if args.kind in ("pattern", "anti-pattern"):
        sub = "optimizations" if args.kind == "pattern" else "anti-patterns"
        folder = sub if args.shared else f"languages/{args.lang}/{sub}"
        text = PATTERN_TEMPLATE.replace("[Pattern name]", args.name).replace("[entry-name]", slug)
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
    snippet = layout.root / snippets_mod.SNIPPET_FOLDER / f"{slug}.py"
    if args.kind in ("pattern", "anti-pattern") and not snippet.exists():
        snippet.parent.mkdir(parents=True, exist_ok=True)
        snippet.write_text(SNIPPET_TEMPLATE.format(entry=layout.rel(path)), encoding="utf-8")
        print(f"wrote {layout.rel(snippet)}: its Implementation snippet (PENDING until written)")
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

    s = sub.add_parser(
        "snippets",
        parents=[common],
        help="the executable snippets: list, compile (CPU, each for its SM), run (GPU checks)",
    )
    s.add_argument(
        "action",
        choices=("list", "compile", "run", "exec"),
        help="list; compile each in a subprocess with CUTE_DSL_ARCH=its SM; run each check "
        "that runs here (generic, sm_90) in a subprocess under a time limit; exec (internal)",
    )
    s.add_argument("paths", nargs="*", help="only these snippets (a path or part of one)")
    s.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds per snippet (default: its TIMEOUT_S, else "
        f"{snippets_mod.DEFAULT_TIMEOUT_S}; compile: 600)",
    )
    s.set_defaults(func=cmd_snippets)

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
