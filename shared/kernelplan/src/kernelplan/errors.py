"""User-facing errors, and how a failure in adapter or upstream code becomes one.

Every command ends a failure it can explain with one ``error:`` line that says what to do.
:func:`explain` decides which failures those are: a scaffolded adapter whose TODOs are open
(``NotImplementedError``), a CuTe DSL that is missing, and any failure while the CuTe DSL or
the CUTLASS sources differ from the project's pins (the likely cause: the line says so).
Anything else is a bug of this project and keeps its traceback.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class KernelPlanError(Exception):
    """A user-facing error: its message is one line that says what to do."""


class Unfinished(KernelPlanError, NotImplementedError):
    """An adapter whose scaffolded ``raise NotImplementedError("TODO(...)")`` bodies are still
    open (still a ``NotImplementedError``, as the scaffold's own tests expect)."""


class NotInstalled(KernelPlanError):
    """A peer library an implementation calls is not installed here: package sessions list
    the implementation as skipped (with this line), not as failed; a single-kernel command
    exits 2 with it."""


class DslMissing(KernelPlanError):
    """The CuTe DSL (``nvidia-cutlass-dsl``) is not installed, or another package provides
    the ``cutlass`` module in its place."""


def first_line(e: BaseException) -> str:
    """The first line of ``e``'s message, stripped ("" for an empty message): what a one-line
    error quotes of a library's multi-line exception."""
    text = str(e).strip()
    return text.splitlines()[0].strip() if text else ""


def _raised_at(e: BaseException) -> str:
    """``path:Lnn`` of the frame that raised ``e`` (relative to the checkout when inside)."""
    import traceback
    from pathlib import Path

    frames = traceback.extract_tb(e.__traceback__) if e.__traceback__ else []
    if not frames:
        return "where it was raised is unknown"
    f = frames[-1]
    path = Path(f.filename)
    try:
        from .cutlass_src import repo_root

        path = path.resolve().relative_to(repo_root().resolve())
    except (ValueError, OSError):
        pass
    return f"{path.as_posix()}:L{f.lineno}"


def explain(e: BaseException, what: str | None = None) -> KernelPlanError | None:
    """The one-line error for ``e`` raised while working on ``what`` (a kernel name), or None
    when the cause is not known (a bug here: let its traceback show).

    - ``NotImplementedError``: the adapter is not finished (:class:`Unfinished`).
    - a missing ``cutlass`` module: which package and version to install (:class:`DslMissing`).
    - anything else (a :class:`KernelPlanError` included) while the installed DSL or the
      CUTLASS sources differ from the pins: the failure, and the difference as its likely
      cause with the command that fixes it.
    A :class:`KernelPlanError` is returned as it is when nothing differs.
    """
    from . import cutlass_src

    head = f"{what}: " if what else ""
    if isinstance(e, KernelPlanError):
        note = cutlass_src.drift_note()
        if not note or note in str(e):
            return e
        out = copy.copy(e)  # the same class (callers test for it), the note added
        out.args = (f"{e} ({note})",)
        return out
    if isinstance(e, NotImplementedError):
        first = first_line(e) or "a method is not written yet"
        return Unfinished(
            f"{what or 'the adapter'} is not finished: {first} ({_raised_at(e)}): fill in "
            "what its TODOs ask, or leave it out of the package's KERNELS"
        )
    if isinstance(e, ModuleNotFoundError) and (e.name or "").split(".")[0] == "cutlass":
        missing = cutlass_src.dsl_problem()
        if missing:
            return DslMissing(missing)
    note = cutlass_src.drift_note()
    if not note:
        return None
    detail = first_line(e)
    detail = f"{type(e).__name__}: {detail}" if detail else type(e).__name__
    return KernelPlanError(f"{head}{detail} ({note})")


def adapter_call(what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` (adapter or upstream code), with a failure :func:`explain`
    knows raised as its one-line :class:`KernelPlanError` (the original chained)."""
    try:
        return fn(*args, **kwargs)
    except KernelPlanError:
        raise
    except Exception as e:
        err = explain(e, what)
        if err is None:
            raise
        raise err from e
