"""Stage 4, the entry point: what the example passes to ``cute.compile`` (an object of a class
with a ``@cute.jit`` ``__call__``, or a ``@cute.jit`` function), else a ``@cute.jit`` function it
calls directly, else the class or function named with ``--entry``. A class's ``__call__`` and
``__init__`` may be inherited from a base class, and ``--entry`` may name a class that the example
imports from a local module (``from common_dense_gemm_efc import DenseGemmEFC``): both are found
by following the example's imports into the files beside it."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from .astutil import READ_ERRORS, dotted, enclosing, is_jit, module_files, parse, src
from .names import ScaffoldError


@dataclass
class Param:
    name: str
    annotation: str | None
    default: ast.expr | None
    kind: str  # positional | kwonly | vararg | varkw


@dataclass
class Entry:
    kind: str  # "class" | "function"
    name: str
    line: int
    call_params: list[Param]
    ctor_class: str | None = None
    ctor_params: list[Param] | None = None  # None: __init__ inherited from outside the examples
    ctor_call: ast.Call | None = None  # where upstream constructs it
    compile_call: ast.Call | None = None  # cute.compile(...) or the direct call
    compile_args: list[ast.expr] = field(default_factory=list)  # its arguments after the fn
    object_param: str | None = None  # host-function parameter that receives the object
    how: str = ""


def params(fn: ast.FunctionDef, drop_self: bool) -> list[Param]:
    a = fn.args
    pos = list(a.posonlyargs) + list(a.args)
    defaults: list[ast.expr | None] = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    out = [_param(x, d, "positional") for x, d in zip(pos, defaults, strict=True)]
    if a.vararg:
        out.append(_param(a.vararg, None, "vararg"))
    out += [_param(x, d, "kwonly") for x, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)]
    if a.kwarg:
        out.append(_param(a.kwarg, None, "varkw"))
    return out[1:] if drop_self and out and out[0].name in ("self", "cls") else out


def _param(arg: ast.arg, default: ast.expr | None, kind: str) -> Param:
    ann = ast.unparse(arg.annotation) if arg.annotation is not None else None
    return Param(arg.arg, ann, default, kind)


def call_map(
    params: list[Param], call: ast.Call | None, args: list[ast.expr]
) -> dict[str, ast.expr]:
    """Parameter name -> the expression a call passes for it."""
    out: dict[str, ast.expr] = {}
    positional = [p for p in params if p.kind == "positional"]
    for p, a in zip(positional, args, strict=False):
        if isinstance(a, ast.Starred):
            break
        out[p.name] = a
    for kw in call.keywords if call is not None else []:
        if kw.arg:
            out[kw.arg] = kw.value
    return out


@dataclass
class _Class:
    node: ast.ClassDef
    tree: ast.Module
    path: Path


class Classes:
    """Classes by the name a module knows them by: defined there, or imported from a local
    module (followed through ``from X import Y [as Z]``)."""

    def __init__(self, tree: ast.Module, path: Path | None, root: Path | None):
        self.tree, self.path, self.root = tree, path, root

    def find(self, name: str, tree: ast.Module | None = None, path: Path | None = None,
             depth: int = 0) -> _Class | None:  # fmt: skip
        tree, path = tree or self.tree, path or self.path
        for n in tree.body:
            if isinstance(n, ast.ClassDef) and n.name == name:
                return _Class(n, tree, path)  # type: ignore[arg-type]
        if path is None or self.root is None or depth > 5:
            return None
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    if (a.asname or a.name) != name:
                        continue
                    for file in module_files(node.module, path, self.root):
                        try:
                            other = parse(file)
                        except READ_ERRORS:
                            continue
                        if hit := self.find(a.name, other, file, depth + 1):
                            return hit
        return None

    def method(self, cls: _Class, name: str, depth: int = 0) -> tuple[ast.FunctionDef | None, bool]:
        """(the method ``cls`` defines or inherits, whether every base was followed)."""
        for item in cls.node.body:
            if isinstance(item, ast.FunctionDef) and item.name == name:
                return item, True
        complete = True
        for base in cls.node.bases:
            found = self.find(dotted(base) or "", cls.tree, cls.path) if depth < 6 else None
            if found is None:
                complete = False
                continue
            fn, ok = self.method(found, name, depth + 1)
            if fn is not None:
                return fn, ok
            complete &= ok
        return None, complete

    def jit_call(self, cls: _Class) -> ast.FunctionDef | None:
        fn, _ = self.method(cls, "__call__")
        return fn if fn is not None and any(is_jit(d) for d in fn.decorator_list) else None


def find_entry(
    tree: ast.Module, forced: str | None = None, path: Path | None = None, root: Path | None = None
) -> Entry:
    """The host entry point (see the module docstring); ``path`` and ``root`` (the examples root)
    let it follow the example's imports.

    Raises:
        ScaffoldError: none found, or ``forced`` names nothing here.
    """
    known = Classes(tree, path, root)
    classes = {n.name: _Class(n, tree, path) for n in tree.body if isinstance(n, ast.ClassDef)}  # type: ignore[arg-type]
    jit_call = {name: fn for name, c in classes.items() if (fn := known.jit_call(c))}
    jit_funcs = {
        n.name: n
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and any(is_jit(d) for d in n.decorator_list)
    }

    def construction(var: str, scope: ast.AST | None) -> tuple[str, ast.Call] | None:
        """(class, call) that ``var = Class(...)`` binds in ``scope``."""
        for node in ast.walk(scope or tree):
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and any(isinstance(t, ast.Name) and t.id == var for t in node.targets)
            ):
                cname = (dotted(node.value.func) or "").split(".")[-1]
                if cname in classes:
                    return cname, node.value
        return None

    def class_entry(cname: str, c: _Class, call: ast.Call | None, ctor: ast.Call | None) -> Entry:
        e = Entry("class", cname, c.node.lineno, params(jit_call[cname], True))
        _attach_ctor(e, known, cname, c, ctor)
        e.compile_call = call
        return e

    found: list[Entry] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func.value if isinstance(node.func, ast.Subscript) else node.func
        if (dotted(func) or "") not in ("cute.compile", "cutlass.cute.compile"):
            continue
        scope = enclosing(node)
        first = node.args[0]
        fname = first.id if isinstance(first, ast.Name) else None
        if fname in jit_funcs:
            e = Entry("function", fname, jit_funcs[fname].lineno, params(jit_funcs[fname], False))
            e.compile_call, e.compile_args = node, list(node.args[1:])
            for p, arg in zip(e.call_params, e.compile_args, strict=False):
                inst = construction(arg.id, scope) if isinstance(arg, ast.Name) else None
                if inst and e.object_param is None:
                    e.object_param = p.name
                    _attach_ctor(e, known, inst[0], classes[inst[0]], inst[1])
            found.append(e)
        elif fname and (inst := construction(fname, scope)) and inst[0] in jit_call:
            e = class_entry(inst[0], classes[inst[0]], node, inst[1])
            e.compile_args = list(node.args[1:])
            found.append(e)
        if found:
            found[-1].how = f"cute.compile at L{node.lineno}: `{src(node)}`"
    if not found:  # a @cute.jit function called directly (compiles and launches in one step)
        for node in ast.walk(tree):
            callee = dotted(node.func) if isinstance(node, ast.Call) else None
            scope = enclosing(node)
            if (
                callee in jit_funcs
                and scope is not None
                and getattr(scope, "name", "") not in jit_funcs
            ):
                fn = jit_funcs[callee]
                e = Entry("function", callee, fn.lineno, params(fn, False))
                e.compile_call, e.compile_args = node, list(node.args)
                e.how = f"called directly at L{node.lineno}; the adapter compiles it instead"
                found.append(e)
                break
    if forced:
        found = [e for e in found if e.name == forced] or [_forced(forced, known, jit_funcs)]
    if not found:
        names = sorted(set(jit_call) | set(jit_funcs))
        if names:
            raise ScaffoldError(
                f"no call of a @cute.jit entry point found (jit classes/functions: "
                f"{', '.join(names)}): pick one with --entry NAME"
            )
        raise ScaffoldError(
            "no @cute.jit entry point in the example (no class with a @cute.jit __call__, no "
            "@cute.jit host function): it may reach one through another module"
        )
    return found[0]


def _forced(name: str, known: Classes, jit_funcs: dict[str, ast.FunctionDef]) -> Entry:
    """The entry ``--entry NAME`` names: a @cute.jit function of the example, or a class the
    example defines or imports from a local module, with a @cute.jit ``__call__``."""
    c = known.find(name)
    fn = known.jit_call(c) if c is not None else None
    if c is not None and fn is not None:
        e = Entry("class", name, c.node.lineno, params(fn, True), how="chosen with --entry")
        _attach_ctor(e, known, name, c, None)
        if c.path != known.path and known.root is not None:
            e.how += f"; defined in {c.path.relative_to(known.root).as_posix()}"
        return e
    if name in jit_funcs:
        fn = jit_funcs[name]
        return Entry("function", name, fn.lineno, params(fn, False), how="chosen with --entry")
    raise ScaffoldError(
        f"--entry {name}: no @cute.jit class or function of that name (a class with a "
        "@cute.jit __call__, its own or inherited, defined in the example or imported from a "
        "module beside it)"
    )


def _attach_ctor(e: Entry, known: Classes, name: str, c: _Class, call: ast.Call | None) -> None:
    init, complete = known.method(c, "__init__")
    e.ctor_class = name
    e.ctor_params = params(init, True) if init is not None else ([] if complete else None)
    e.ctor_call = call
