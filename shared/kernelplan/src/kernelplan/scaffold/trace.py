"""Stage 5, the values: each expression upstream passes to the entry, traced back through
``run()`` and its callers to a literal, a CuTe DSL type (``cutlass.Float32``), an enum member
(``utils.TensorMapUpdateMode.SMEM``) or an argparse default; a value upstream computes is a TODO
whose ``why`` cites the lines that compute it."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from .astutil import NO, aliases, clip, dotted, dsl_type, enclosing, is_main, literal, src
from .entry import call_map, params


@dataclass
class Value:
    """What the scaffold knows about one value upstream passes.

    kind: "lit" (``value`` a Python literal), "dtype" (``value`` a DSL type name), "enum"
    (``value`` the member name, ``enum`` the class expression in the example's namespace) or
    "todo" (``why`` says what upstream does instead). ``why`` cites the source line;
    ``flags`` are the example flags it comes from.
    """

    kind: str
    value: Any = None
    why: str = ""
    enum: str | None = None
    flags: list[str] = field(default_factory=list)


@dataclass
class Flag:
    dest: str
    option: str
    value: Value


class Tracer:
    """Traces an expression that upstream passes back to a literal, a DSL type, an enum
    member or an argparse default; anything computed is a TODO citing its lines."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        names = aliases(tree)
        self.modules = {k for k, v in names.items() if k == v.split(".")[-1] or "." in v}
        self.modules |= {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
        self.flags: dict[str, Flag] = {}
        self._read_flags()

    # -- argparse -------------------------------------------------------------------------
    def _read_flags(self) -> None:
        calls = [
            n
            for n in ast.walk(self.tree)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "add_argument"
            and n.args
            and isinstance(n.args[0], ast.Constant)
            and str(n.args[0].value).startswith("-")
        ]
        for call in sorted(calls, key=lambda c: c.lineno):
            options = [a.value for a in call.args if isinstance(a, ast.Constant)]
            kw = {k.arg: k.value for k in call.keywords if k.arg}
            option = next((o for o in options if o.startswith("--")), options[0])
            dest = literal(kw.get("dest"))
            if not isinstance(dest, str):
                dest = option.lstrip("-").replace("-", "_")
            action = literal(kw.get("action"))
            default = kw.get("default")
            if default is None and action in ("store_true", "store_false"):
                v = Value("lit", action == "store_false")
            elif default is None:
                v = Value("lit", None)
            else:
                v = self.leaf(default)
                if v is None:
                    v = Value("todo", why=f"its default is `{src(default, 40)}`")
            where = f"{option} default (L{call.lineno})"
            v.why = f"{where}: {v.why}" if v.kind == "todo" else where
            v.flags = [dest]
            self.flags.setdefault(dest, Flag(dest, option, v))

    def leaf(self, node: ast.AST) -> Value | None:
        """A literal, a DSL type or an enum member, else None."""
        lit = literal(node)
        if lit is not NO:
            return Value("lit", lit)
        if (dt := dsl_type(node)) is not None:
            return Value("dtype", dt)
        chain = dotted(node) or ""
        parts = chain.split(".")
        if (
            len(parts) >= 2
            and parts[0] in self.modules
            and parts[-1][:1].isupper()
            and not parts[-1].startswith("Float")
        ):
            return Value("enum", parts[-1], enum=".".join(parts[:-1]))
        return None

    # -- tracing ----------------------------------------------------------------------------
    def trace(self, node: ast.expr, depth: int = 0) -> Value:
        leaf = self.leaf(node)
        if leaf is not None:
            leaf.why = f"upstream passes `{src(node, 50)}` (L{node.lineno})"
            return leaf
        chain = dotted(node) or ""
        if chain.startswith("args.") and chain[5:] in self.flags:
            f = self.flags[chain[5:]]
            return Value(f.value.kind, f.value.value, f.value.why, f.value.enum, [f.dest])
        scope = enclosing(node)
        if isinstance(node, ast.Name) and scope is not None and depth < 6:
            assigns = [s for s in _bindings(scope).get(node.id, []) if s.lineno < node.lineno]
            assigns = [s for s in assigns if not _is_conversion(s, node.id)]
            if assigns:
                return self._computed(node.id, assigns, scope)
            if isinstance(scope, ast.FunctionDef):
                return self._parameter(node.id, scope, depth)
            if node.id in self.flags:
                return self.trace(ast.parse(f"args.{node.id}").body[0].value, depth + 1)
        value = self._evaluate(node, depth)
        if value is not NO:
            flags = [
                n.attr for n in ast.walk(node) if dotted(n) == f"args.{getattr(n, 'attr', '')}"
            ]
            detail = ", ".join(
                f"{self.flags[f].option} default {self.flags[f].value.value!r}"
                for f in flags
                if f in self.flags
            )
            why = f"upstream passes `{src(node, 50)}` (L{node.lineno})" + (
                f", with {detail}" if detail else ""
            )
            return Value("lit", value, why, flags=flags)
        return self._todo_expr(node, scope)

    def _parameter(self, name: str, fn: ast.FunctionDef, depth: int) -> Value:
        """A parameter of ``fn``: what its caller passes, else its default."""
        signature = params(fn, drop_self=False)
        for call in ast.walk(self.tree):
            if isinstance(call, ast.Call) and dotted(call.func) == fn.name:
                arg = call_map(signature, call, list(call.args)).get(name)
                if arg is not None:
                    return self.trace(arg, depth + 1)
        p = next((p for p in signature if p.name == name), None)
        if p is not None and p.default is not None:
            v = self.leaf(p.default)
            if v is not None:
                v.why = f"default of `{fn.name}({name}=...)` (L{fn.lineno})"
                return v
        return Value(
            "todo",
            why=f"`{name}` is a parameter of `{fn.name}()` (L{fn.lineno}) that no caller here sets",
        )

    def _computed(self, name: str, stmts: list[ast.stmt], scope: ast.AST) -> Value:
        where = "the main block" if is_main(scope) else f"`{scope.name}()`"  # type: ignore[attr-defined]
        if len(stmts) == 1 and isinstance(stmts[0], ast.Assign) and _guard(stmts[0], scope) is None:
            lit = self.leaf(stmts[0].value)
            if lit is not None:
                lit.why = f"upstream sets `{name}` at L{stmts[0].lineno}: `{src(stmts[0], 50)}`"
                return lit
        shown = "; ".join(f"L{s.lineno} `{_stmt(s, scope)}`" for s in stmts[:3])
        more = "; ..." if len(stmts) > 3 else ""
        return Value(
            "todo",
            why=f"upstream computes `{name}` in {where}: {shown}{more}",
            flags=self._flags_read(stmts, scope),
        )

    def _todo_expr(self, node: ast.expr, scope: ast.AST | None) -> Value:
        why = f"upstream passes `{src(node, 60)}` (L{node.lineno})"
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        stmts = [
            s
            for n in sorted(names)
            for s in (_bindings(scope).get(n, []) if scope is not None else [])
            if s.lineno < node.lineno
        ]
        if stmts:
            why += ", computed at " + ", ".join(
                f"L{s.lineno}" for s in sorted(stmts, key=lambda s: s.lineno)[:4]
            )
        return Value("todo", why=why, flags=self._flags_read(stmts, scope) if scope else [])

    def _flags_read(self, stmts: list[ast.stmt], scope: ast.AST) -> list[str]:
        """The example flags the statements read, through the scope's parameters."""
        out: list[str] = []
        seen: set[str] = set()
        todo = [n for s in stmts for n in _reads(s)]
        binds = _bindings(scope)
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            if n in self.flags and is_main(scope):
                out.append(n)
            for s in binds.get(n, []):
                todo += _reads(s)
            if isinstance(scope, ast.FunctionDef) and n in {p.name for p in params(scope, False)}:
                for call in ast.walk(self.tree):
                    if isinstance(call, ast.Call) and dotted(call.func) == scope.name:
                        arg = call_map(params(scope, False), call, list(call.args)).get(n)
                        for a in ast.walk(arg) if arg is not None else ():
                            d = dotted(a) or ""
                            if d.startswith("args.") and d[5:] in self.flags:
                                out.append(d[5:])
                            elif isinstance(a, ast.Name) and a.id in self.flags:
                                out.append(a.id)
        return list(dict.fromkeys(out))

    def _evaluate(self, node: ast.AST, depth: int) -> Any:
        """A simple expression over literals and flag defaults (``True if args.raster_order ==
        "along_m" else False``), else NO."""
        if depth > 8:
            return NO
        ev = lambda n: self._evaluate(n, depth + 1)  # noqa: E731
        if (lit := literal(node)) is not NO:
            return lit
        chain = dotted(node) or ""
        if chain.startswith("args.") and chain[5:] in self.flags:
            v = self.flags[chain[5:]].value
            return v.value if v.kind == "lit" else NO
        if isinstance(node, (ast.Tuple, ast.List)):
            items = [ev(e) for e in node.elts]
            return NO if NO in items else tuple(items)
        if isinstance(node, ast.IfExp):
            test = ev(node.test)
            return NO if test is NO else ev(node.body if test else node.orelse)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            v = ev(node.operand)
            return NO if v is NO else not v
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            a, b = ev(node.left), ev(node.comparators[0])
            ops = {ast.Eq: "__eq__", ast.NotEq: "__ne__"}
            if a is NO or b is NO or type(node.ops[0]) not in ops:
                return NO
            return getattr(a, ops[type(node.ops[0])])(b) is True
        return NO


def _bindings(scope: ast.AST) -> dict[str, list[ast.stmt]]:
    """Name -> the statements of ``scope`` (not of nested functions) that assign it."""
    out: dict[str, list[ast.stmt]] = {}
    todo: list[ast.AST] = list(getattr(scope, "body", []))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.For)) or (
            isinstance(node, ast.AnnAssign) and node.value is not None
        ):
            targets = [node.target]
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    out.setdefault(n.id, []).append(node)  # type: ignore[arg-type]
        todo.extend(ast.iter_child_nodes(node))
    for v in out.values():
        v.sort(key=lambda s: s.lineno)
    return out


def _reads(stmt: ast.AST) -> list[str]:
    value = getattr(stmt, "value", None) or getattr(stmt, "iter", None)
    names = [n.id for n in ast.walk(value) if isinstance(n, ast.Name)] if value else []
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        names.append(stmt.target.id)
    return names


def _is_conversion(stmt: ast.stmt, name: str) -> bool:
    """``x = cutlass.dtype(x)`` / ``x = tuple(x)``: the same value in another type."""
    if not isinstance(stmt, ast.Assign) or not isinstance(stmt.value, ast.Call):
        return False
    fn = dotted(stmt.value.func) or ""
    args = stmt.value.args
    return (
        fn in ("tuple", "list", "int", "float", "str", "bool", "cutlass.dtype")
        and len(args) == 1
        and isinstance(args[0], ast.Name)
        and args[0].id == name
    )


def _guard(stmt: ast.stmt, scope: ast.AST) -> ast.expr | None:
    cur = getattr(stmt, "_parent", None)
    while cur is not None and cur is not scope:
        if isinstance(cur, ast.If):
            return cur.test
        cur = getattr(cur, "_parent", None)
    return None


def _stmt(stmt: ast.stmt, scope: ast.AST) -> str:
    text = ast.unparse(stmt).splitlines()[0].rstrip(":")
    guard = _guard(stmt, scope)
    return clip((f"if {ast.unparse(guard)}: " if guard is not None else "") + text, 60).replace(
        "`", "'"
    )
