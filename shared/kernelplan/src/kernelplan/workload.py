"""Workloads: one operator defined once, and the value objects every implementation shares.

A *workload* (GEMM, MLA decode, attention forward, ...) states the problem as a frozen
dataclass validated once (:class:`Problem`), the tensors (:class:`~kernelplan.TensorSpec`),
the PyTorch reference, FLOPs and minimum bytes, and the problems that checks and profiles run.
Its *implementations* (:class:`kernelplan.KernelPlan` subclasses: an imported CUTLASS example,
a kernel of this project, a peer library, PyTorch) declare ``workload = <the workload>`` and
add only what is theirs: target SM, a typed config (:class:`Config`) and ``plan()``. Every
table, comparison and roofline is across the implementations of one workload, whatever package
they live in (:func:`kernelplan.registry.implementations`).

The workloads themselves live in :mod:`kernelplan.workloads`; registration of
implementations is the ``KERNELS`` table of each package (one place).
"""

from __future__ import annotations

import abc
import dataclasses
import json
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .errors import KernelPlanError


class ShapeError(KernelPlanError):
    """A problem or config that a workload or an implementation cannot take (zero sizes,
    misalignment, an unsupported dtype, head count or page size)."""


def _tupled(v: Any) -> Any:
    """JSON lists back to the tuples a frozen dataclass holds (hashable, comparable)."""
    if isinstance(v, list):
        return tuple(_tupled(x) for x in v)
    return v


class _Frozen:
    """Shared by :class:`Problem` and :class:`Config`: construction from a dict (records,
    ``--config``), validation once in ``__post_init__``, and a JSON-ready dict."""

    #: what the value is called in messages ("problem", "config")
    _what: ClassVar[str] = "value"
    #: the command-line flag whose ``key=value`` items :meth:`from_overrides` parses
    _flag: ClassVar[str] = "--config"
    #: said after an unknown key's name in :meth:`from_overrides`'s message
    _unknown_where: ClassVar[str] = ""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # lists from JSON become tuples
            v = getattr(self, f.name)
            if isinstance(v, list):
                object.__setattr__(self, f.name, _tupled(v))
        self.validate()

    def validate(self) -> None:
        """Raise :class:`ShapeError` with one line naming the flag to change."""

    def to_dict(self) -> dict[str, Any]:
        return {
            f.name: (list(v) if isinstance(v, tuple) else v)
            for f in dataclasses.fields(self)
            for v in [getattr(self, f.name)]
        }

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]):
        """Build from a mapping (a record's ``problem``, parsed ``--config`` items).

        Raises:
            ShapeError: an unknown key (the message lists the known ones) or a value the
                dataclass rejects.
        """
        known = cls.field_names()
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ShapeError(
                f"unknown {cls._what} key(s) {', '.join(unknown)}; known: {', '.join(known)}"
            )
        try:
            return cls(**{k: _tupled(v) for k, v in values.items()})
        except TypeError as e:
            raise ShapeError(f"bad {cls._what}: {e}") from None

    @classmethod
    def from_overrides(cls, base: _Frozen | None, items: Mapping[str, str]):
        """``base`` (or the defaults) with the string ``items`` applied, each parsed by its
        field's type: ``128,256`` or ``128x256`` (or ``[1,0]``) for a tuple, ``true``/``false``
        for a bool, a number, or a string (an enum member name for an enum-typed field).

        Raises:
            ShapeError: an unknown key, a value that does not parse as its field's type, or
                a value :meth:`validate` rejects (a value's message names the flag,
                ``--config`` or ``--problem``; an unknown key's names the key and the known
                ones).
        """
        hints = typing.get_type_hints(cls)
        known = cls.field_names()
        values = base.to_dict() if base is not None else {}
        for k, raw in items.items():
            if k not in known:
                raise ShapeError(
                    f"unknown {cls._what} key {k!r}{cls._unknown_where}; known: "
                    f"{', '.join(known) or 'none (it takes no ' + cls._what + ')'}"
                )
            values[k] = _parse_value(k, raw, hints.get(k, Any), cls._flag)
        return cls.from_dict(values)

    def replace(self, **changes: Any):
        return dataclasses.replace(self, **changes)

    #: fields every label shows; the others only where they differ from their default
    #: (None: every field, always)
    label_always: ClassVar[tuple[str, ...] | None] = None
    #: fields derived from others (a default scale, a page count): never in a label
    label_derived: ClassVar[tuple[str, ...]] = ()

    def label(self) -> str:
        """``m=4096 n=4096 k=4096 ...`` (tuples as ``128x256``): a short name for tables and
        logs (records keep every field)."""
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        parts = []
        for k, v in self.to_dict().items():
            if k in self.label_derived:
                continue
            if self.label_always is None or k in self.label_always or v != defaults.get(k):
                parts.append(f"{k}={_fmt(v)}")
        return " ".join(parts) or "default"


def _fmt(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return "x".join(str(x) for x in v)
    return str(v)


class Problem(_Frozen):
    """Base of a workload's problem: subclass it as ``@dataclass(frozen=True)`` and override
    :meth:`validate`. Normalise derived fields in ``validate`` with ``object.__setattr__``
    (a frozen dataclass allows it only there)."""

    _what = "problem"
    _flag = "--problem"


class Config(_Frozen):
    """Base of an implementation's typed config (tile shape, cluster shape, stages, ...):
    ``@dataclass(frozen=True)``, validated once in :meth:`validate`.

    ``--config key=value`` items are parsed by :meth:`from_overrides` against the field
    types: ``tile_mn=128,256`` or ``128x256`` for a tuple, ``true``/``false`` for a bool,
    a number, or a string (an enum member name for an enum-typed field)."""

    _what = "config"
    _unknown_where = " for this implementation"


@dataclass(frozen=True)
class NoConfig(Config):
    """The config of an implementation with nothing to tune."""


def _parse_value(key: str, raw: Any, hint: Any, flag: str = "--config") -> Any:
    """One ``key=value`` item's value by its field type (see :meth:`_Frozen.from_overrides`);
    ``flag`` names the option in the error message."""
    if not isinstance(raw, str):
        return raw
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union or (origin is not None and type(None) in args):
        inner = [a for a in args if a is not type(None)]
        if raw.lower() in ("none", "null"):
            return None
        hint = inner[0] if len(inner) == 1 else Any
        origin, args = typing.get_origin(hint), typing.get_args(hint)
    try:
        if origin is tuple:
            parts = [p for p in raw.strip("[]() ").replace("x", ",").split(",") if p.strip()]
            elem = args[0] if args else int
            try:
                return tuple(_parse_value(key, p.strip(), elem, flag) for p in parts)
            except ShapeError:
                name = getattr(elem, "__name__", str(elem))
                raise ShapeError(
                    f"{flag} {key}={raw}: not a tuple of {name} (e.g. {key}=128,256)"
                ) from None
        if hint is bool:
            if raw.lower() in ("1", "true", "yes"):
                return True
            if raw.lower() in ("0", "false", "no"):
                return False
            raise ValueError(raw)
        if hint is int:
            return int(raw)
        if hint is float:
            return float(raw)
        if isinstance(hint, type) and issubclass(hint, __import__("enum").Enum):
            name = raw.split(".")[-1]
            return hint[name]
        if origin is typing.Literal:
            if raw not in args:
                raise ValueError(raw)
            return raw
        if hint is str:
            return raw
        return json.loads(raw)
    except (ValueError, KeyError, json.JSONDecodeError):
        if origin is typing.Literal:
            want = "one of " + ", ".join(str(a) for a in args)
        elif isinstance(hint, type) and issubclass(hint, __import__("enum").Enum):
            want = "one of " + ", ".join(m.name for m in hint)
        else:
            name = getattr(hint, "__name__", str(hint))
            want = ("an " if name[:1] in "aeiou" else "a ") + name
        if "=" in raw:  # `--config a=1,b=2`: two items run together
            items = " ".join(p.strip() for p in raw.split(",") if p.strip())
            want += f" (separate items with spaces: {flag} {key}={items})"
        raise ShapeError(f"{flag} {key}={raw}: not {want}") from None


class Workload(abc.ABC):
    """One operator, defined once. Subclasses set ``name``, ``problem_type`` and
    ``description`` and implement the abstract methods.

    Implementations reach the workload through ``KernelPlan.workload``; an implementation
    whose upstream example really takes other tensors (a 2-D view, an extra epilogue operand)
    overrides ``KernelPlan.tensor_specs`` / ``reference`` and says so there.
    """

    name: ClassVar[str]
    problem_type: ClassVar[type[Problem]]
    description: ClassVar[str] = ""

    # -- the problem ------------------------------------------------------------------------
    def problem(self, value: Problem | Mapping[str, Any] | None = None, **kw: Any) -> Problem:
        """The workload's problem from a problem, a mapping (a record) or keywords.

        Raises:
            ShapeError: unknown keys or a problem the workload rejects.
        """
        if isinstance(value, self.problem_type) and not kw:
            return value
        if isinstance(value, Problem):
            value = value.to_dict()
        return self.problem_type.from_dict({**dict(value or {}), **kw})

    def check_problems(self) -> list[Problem]:
        """Problems ``check-<package>`` runs for every implementation (those an
        implementation does not take are skipped with its reason)."""
        return []

    def profile_problems(self) -> list[Problem]:
        """Problems ``profile`` runs (default: the check problems)."""
        return self.check_problems()

    # -- tensors and reference ----------------------------------------------------------------
    @abc.abstractmethod
    def tensor_specs(self, problem: Problem) -> dict[str, Any]:
        """Every tensor argument by name (inputs and outputs), as :class:`TensorSpec`."""

    def prepare_inputs(
        self, problem: Problem, specs: Mapping[str, Any], seed: int, device: str = "cuda"
    ) -> dict[str, Any]:
        """Fresh tensors for one run, drawn from ``seed`` (override for tensors whose values
        must be consistent with each other: page tables, sequence lengths)."""
        import torch

        gen = torch.Generator(device=device)
        gen.manual_seed(seed)
        return {n: s.allocate(gen, device) for n, s in specs.items()}

    @abc.abstractmethod
    def reference(self, problem: Problem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The expected outputs by name, computed with PyTorch in float32 or wider."""

    def reference_lowp(self, problem: Problem, inputs: Mapping[str, Any]) -> dict[str, Any] | None:
        """The same computation done as a straightforward PyTorch program would do it in the
        inputs' own precision (rounding where a kernel must round), or None. When given, a
        check also accepts an error up to :data:`kernelplan.check.LOWP_FACTOR` times this
        baseline's error against :meth:`reference` (see :func:`kernelplan.check.compare`)."""
        return None

    def tolerance(self, problem: Problem, output: str):
        """The :class:`kernelplan.check.Tolerance` for one output, or None for the table of
        its dtype (override where an output's error is not its dtype's rounding, e.g. an
        fp32 LSE computed with fast exp2/log2)."""
        return None

    #: Faults a check can plant in the INPUTS the kernel sees (the reference keeps the true
    #: inputs): name -> what it does. ``--inject-fault <name>`` runs one.
    input_faults: ClassVar[dict[str, str]] = {}

    def plant_input_fault(self, problem: Problem, inputs: dict[str, Any], fault: str) -> None:
        """Corrupt ``inputs`` (a copy the kernel alone sees) as ``fault`` says."""
        raise ShapeError(f"workload {self.name} has no input fault {fault!r}")

    @abc.abstractmethod
    def flops_bytes(self, problem: Problem) -> tuple[float, float]:
        """(FLOPs, minimum DRAM bytes) of the problem, independent of the implementation."""

    def compute_dtype(self, problem: Problem) -> str:
        """The dtype that picks the device's tensor peak (torch spelling)."""
        return str(getattr(problem, "dtype", "float16"))
