"""Stage 8, rendering: the design written out through the templates in ``templates/``
(``string.Template``, ``$name`` placeholders) as the adapter, the workload stub, the devlog
stub; then the written files' imports sorted and the code formatted with ruff. Every TODO is a
``raise NotImplementedError("TODO(<name>): ...")``; :func:`unfinished` finds those still open."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import re
import string
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .astutil import clip
from .design import WORKLOAD, Design, Field, Todo

if TYPE_CHECKING:
    from .example import Example
    from .workspace import PackageWorkload

TEMPLATES = Path(__file__).with_name("templates")


def render(template: str, **values: Any) -> str:
    return string.Template((TEMPLATES / template).read_text(encoding="utf-8")).substitute(values)


# Every line written fits ruff's 100 columns once ruff has formatted the code: prose is wrapped
# here (docstrings at 96 columns with their quotes; a word longer than that alone on its line,
# which E501 allows), comments and string literals break long words too.


def _strs(text: str, indent: int) -> str:
    """A long string as implicitly joined literals, one per line, at ``indent``."""
    parts = textwrap.wrap(text, 94 - indent, drop_whitespace=False)
    return "\n".join(" " * indent + json.dumps(p, ensure_ascii=False) for p in parts)


def str_literal(text: str, indent: int, room: int = 86) -> str:
    """``text`` as a string literal; when longer than ``room - indent``, parenthesised parts
    split after a '/' or '.' or before a ':', one per line."""
    if len(text) <= room - indent:
        return json.dumps(text)
    parts = [""]
    for piece in re.split(r"(?<=[/.])|(?=:)", text):
        if parts[-1] and len(parts[-1]) + len(piece) > 90 - indent:
            parts.append("")
        parts[-1] += piece
    pad = " " * (indent + 4)
    return "(\n" + "\n".join(pad + json.dumps(p) for p in parts) + "\n" + " " * indent + ")"


def _todo_line(t: Todo, indent: int) -> str:
    pad = " " * indent
    return (
        f"{pad}raise NotImplementedError(\n{_strs(f'TODO({t.name}): {t.what}', indent + 4)}\n{pad})"
    )


def _fill(text: str, indent: int = 0) -> str:
    return textwrap.fill(
        text, 96, initial_indent=" " * indent, subsequent_indent=" " * indent,
        break_long_words=False, break_on_hyphens=False,
    )  # fmt: skip


def _comment(text: str, indent: int) -> str:
    return "\n".join(
        " " * indent + "# " + ln for ln in textwrap.wrap(text, 96 - indent, break_on_hyphens=False)
    )


def _field_lines(fields: list[Field]) -> str:
    out = []
    for f in fields:
        out.append(
            _comment(
                f.why
                + (f" (cutlass.{f.default})" if f.kind == "dtype" else "")
                + (" (an enum member name)" if f.kind == "enum" else ""),
                4,
            )
        )
        out.append(f"    {f.name}: {f.type} = {f.default!r}")
    return "\n".join(out)


def render_adapter(
    ex: Example, d: Design, package: str, kernel: str, cls: str, pw: PackageWorkload | None
) -> str:
    e = ex.entry
    lines: list[str] = []
    for name, t in d.locals:
        lines.append(_comment(t.what.split("; compute it here")[0], 8))
        what = "compute it from problem and config: " + t.what.split("; compute it here")[0]
        lines.append(
            f"        {name} = _todo(\n            {name!r},\n{_strs(what, 12)},\n        )"
        )
    if d.clusters:
        lines.append(f"        clusters, _why = max_active_clusters({d.clusters}, target)")
    lines.append("        mod = load_example(self.source)")
    kwargs = ", ".join(f"{k}={v}" for k, v in d.ctor)
    fn = f"mod.{e.name}"
    if e.kind == "class":
        lines.append(f"        kernel = mod.{e.name}({kwargs})")
        fn = "kernel"
    elif e.object_param and e.ctor_class:
        lines.append(f"        obj = Const(mod.{e.ctor_class}({kwargs}))")
    args = ", ".join(d.call) + ("," if len(d.call) == 1 else "")
    lines.append(
        f"        return CuteKernel(self.name, {fn}, lambda t: ({args}), "
        "self.tensor_specs(problem))"
    )
    body = "\n".join(lines)

    overrides = ""
    if d.override_tensors:
        by = {t.name: t for t in d.todos}
        overrides = (
            "\n    def tensor_specs(self, problem: Problem) -> dict[str, TensorSpec]:\n"
            + _todo_line(by["tensor_specs"], 8)
            + "\n\n    def reference(self, problem: Problem, inputs: Mapping[str, Any])"
            + " -> dict[str, Any]:\n"
            + _todo_line(by["reference"], 8)
            + "\n"
        )
    supports = next(t for t in d.todos if t.name == "supports")
    config_cls = f"{cls}Config" if d.config else "NoConfig"
    config_def = ""
    if d.config:
        config_def = (
            f"\n\n@dataclass(frozen=True)\nclass {config_cls}(Config):\n"
            + _fill(
                f'"""What {e.ctor_class or e.name} is built with; the defaults are the '
                'example\'s."""',
                4,
            )
            + "\n\n"
            + _field_lines(d.config)
            + "\n"
        )
    if pw is None:
        base, base_import, wl_line = (
            "KernelPlan",
            "from kernelplan import KernelPlan",
            "    workload = WORKLOAD\n",
        )
        wl_import = "from ..workload import WORKLOAD"
        pkg_line = f"    package: ClassVar[str] = {package!r}\n"
    else:
        base, base_import = pw.base, pw.base_import
        wl_line = f"    workload = {pw.workload_expr}\n" if pw.workload_expr else ""
        wl_import = pw.workload_import or ""
        pkg_line = f"    package: ClassVar[str] = {package!r}\n" if pw.workload_expr else ""
    what = f"class ``{e.name}``" if e.kind == "class" else f"``@cute.jit`` function ``{e.name}``"
    dropped = (
        "\n"
        + _fill(
            "Example flags not offered here (no argument of the entry takes them; the workload's "
            "problem, tensors or reference must carry what they mean): "
            + ", ".join(f"``{f}``" for f in d.dropped)
            + "."
        )
        + "\n"
        if d.dropped
        else ""
    )
    imports = [
        "from kernelplan import STREAM, Config, CuteKernel, NoConfig, Problem, ShapeError",
        "from kernelplan import Target, TensorSpec, dtypes",
        "from kernelplan.cutlass_src import load_example",
        "from kernelplan.device import max_active_clusters",
        "from kernelplan.kernel import Const",
        base_import,
        wl_import,
    ]
    return render(
        "adapter.py.tmpl",
        head=_fill(f'"""Adapter: {what} of the CUTLASS CuTe DSL example ``{ex.relpath}``.'),
        how=_fill(f"Upstream: {clip(e.how, 200)}."),
        dropped=dropped,
        imports="\n".join(i for i in imports if i),
        config_def=config_def,
        cls=cls,
        base=base,
        doc=_fill(f'"""{e.name} ({ex.sm}), imported from ``{ex.relpath}``."""', 4),
        kernel=kernel,
        pkg_line=pkg_line,
        wl_line=wl_line,
        source=str_literal(ex.relpath, 4),
        sm_comment=_comment(
            f"{ex.sm}: {ex.sm_why}"
            + (f"; e.g. {', '.join(ex.evidence)}" if ex.evidence else "")
            + "".join(f". Note: {n}" for n in ex.sm_notes),
            4,
        ),
        sm=ex.sm,
        config_cls=config_cls,
        description=f"CUTLASS CuTe DSL {e.name}, {ex.sm}",
        supports=_todo_line(supports, 8),
        overrides=overrides,
        plan_body=body,
    )


def render_workload(ex: Example, d: Design, package: str) -> str:
    name = package.replace("-", "_")
    description = f"What {ex.entry.ctor_class or ex.entry.name} computes (a scaffolded stub)"
    camel = "".join(p.capitalize() for p in name.split("_"))
    sizes = [
        f.name for f in d.problem if f.type in ("int", "tuple[int, ...]") and _positive(f.default)
    ]
    todo = {t.name: _todo_line(t, 8) for t in d.todos if t.where == WORKLOAD}
    return render(
        "workload.py.tmpl",
        package=package,
        relpath=ex.relpath,
        problem_cls=f"{camel}Problem",
        workload_cls=f"{camel}Workload",
        name=name,
        fields=_field_lines(d.problem) or "    pass",
        sizes=repr(tuple(sizes)),
        tensor_specs=todo["tensor_specs"],
        reference=todo["reference"],
        flops_bytes=todo["flops_bytes"],
        description=description,
        doc=_fill(f'"""{description}"""', 4),
    )


def _positive(v: Any) -> bool:
    vals = v if isinstance(v, tuple) else (v,)
    return bool(vals) and all(
        isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in vals
    )


def render_devlog(ex: Example, package: str, kernel: str, imported: str) -> str:
    ent = ("class " if ex.entry.kind == "class" else "function ") + ex.entry.name
    return render(
        "devlog.md.tmpl",
        title=f"{package}/{kernel}",
        entry=ent,
        sm=ex.sm,
        relpath=ex.relpath,
        imported=imported,
    )


def format_files(root: Path, files: list[Path], messages: list[str]) -> None:
    """Sort imports, drop the unused ones the template offers, and format, with ruff."""
    if importlib.util.find_spec("ruff") is None:
        messages.append("ruff not installed: generated files not formatted")
        return
    for args in (["check", "--fix-only", "--select", "I,F401", "--quiet"], ["format", "--quiet"]):
        r = subprocess.run(
            [sys.executable, "-m", "ruff", *args, *map(str, files)],
            cwd=root,
            capture_output=True,
            text=True,
        )
        if r.returncode:
            messages.append(f"ruff {args[0]} failed: {r.stderr.strip()[:300]}")


def unfinished(plan_cls: type) -> list[str]:
    """Methods of a plan class whose body is still only a TODO raise (``TODO(...)``)."""
    out = []
    for name in ("supports", "tensor_specs", "reference", "flops_bytes", "plan"):
        try:
            fn = getattr(plan_cls, name)
            node = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
        except (AttributeError, OSError, TypeError, SyntaxError, IndexError):
            continue
        body = [
            s
            for s in getattr(node, "body", [])
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        ]
        if any(isinstance(s, ast.Raise) and "TODO(" in ast.unparse(s) for s in body):
            out.append(name)
    return out
