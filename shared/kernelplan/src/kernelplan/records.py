"""Result records: one JSON file per run under ``results/<package>/<kernel>/``.

Files are created with exclusive mode and a unique name (UTC time, device, kind, random
suffix), so a record is never overwritten; nothing here deletes or rewrites one. Every record
carries the environment that produced it (device, SM, clocks seen, driver, DSL version,
CUTLASS commit, torch, host) beside its config, problem, timings and check result.

Records are committed, so they hold no path of the writer's machine: :func:`write_record`
writes every path under the checkout relative to its root (``.cache/kernelplan/static/...``)
and one under the home folder as ``~/...`` (:func:`portable`). Records written before that
rule (up to 2026-11-30) hold absolute cubin, compile-cache and ncu paths; readers never use
those: :func:`load_records` drops them (:func:`drop_machine_paths`).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import secrets
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import KernelPlanError

#: 1: records up to 2026-11-29 (problem and config as each adapter wrote them; ``sm_count``
#: inside the config). 2: ``workload`` and ``target`` (SM, SM count and its source) added;
#: problem and config are the workload's and implementation's dataclasses as dicts.
SCHEMA_VERSION = 2


def results_root() -> Path:
    """``$KERNELPLAN_RESULTS`` or ``results/`` at the checkout's root."""
    env = os.environ.get("KERNELPLAN_RESULTS")
    if env:
        return Path(env)
    from .cutlass_src import repo_root

    return repo_root() / "results"


#: Distributions of peer implementations whose versions every record carries when installed.
PEER_DISTS = (
    "flashinfer-python",
    "tilegym",
    "cuda-tile",
    "flash-attn-4",
    "quack-kernels",
    "flash-mla",
)


def _version(dist: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:
        return None


def environment(device: Any = None) -> dict[str, Any]:
    """Versions and host facts recorded with every number."""
    from .cutlass_src import PINNED_COMMIT, source_commit

    # the loaded torch's own version when it is imported; else its distribution's (no import:
    # importing torch costs seconds in a CPU-only static run)
    torch_mod = sys.modules.get("torch")
    torch_v = getattr(torch_mod, "__version__", None) or _version("torch")
    return {
        "host": platform.node(),
        "python": sys.version.split()[0],
        "torch": torch_v,
        "nvidia_cutlass_dsl": _version("nvidia-cutlass-dsl"),
        "cutlass_commit_pinned": PINNED_COMMIT,
        "cutlass_commit_sources": source_commit(),
        "cute_dsl_arch_env": os.environ.get("CUTE_DSL_ARCH"),
        # the peers' versions where installed (a record names what it compared against)
        "peers": {d: v for d in PEER_DISTS if (v := _version(d))},
        "device": device.to_dict() if device is not None else None,
    }


def ensure_writable(root: Path | str | None = None) -> Path:
    """Create the results folder if needed and prove a file can be made in it.

    Raises:
        KernelPlanError: it cannot (the message names the folder and the OS error).
    """
    root = Path(root) if root is not None else results_root()
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / f".write-probe-{secrets.token_hex(4)}"
        with open(probe, "x", encoding="utf-8"):
            pass
        probe.unlink()
    except OSError as e:
        raise KernelPlanError(
            f"cannot write result records under {root}: {e.strerror or e}; choose another "
            "--results-dir (or KERNELPLAN_RESULTS), or pass --no-record"
        ) from None
    return root


def _path_prefixes() -> list[tuple[str, str]]:
    """(absolute prefix, replacement) pairs, longest first: the checkout's root (as found and
    resolved) becomes relative, the home folder ``~``."""
    from .cutlass_src import repo_root

    pairs: dict[str, str] = {}
    root = repo_root()
    for r in {str(root), str(root.resolve())}:
        if r not in ("", "/"):
            pairs[r.rstrip("/") + "/"] = ""
    home = os.path.expanduser("~")
    if home not in ("", "/", "~"):
        for h in {home, os.path.realpath(home)}:
            pairs.setdefault(h.rstrip("/") + "/", "~/")
    return sorted(pairs.items(), key=lambda kv: -len(kv[0]))


def portable(value: Any, prefixes: list[tuple[str, str]] | None = None) -> Any:
    """``value`` (a record, or any part of one) with no path of this machine: every string
    that holds an absolute path under the checkout gets it relative to the checkout's root
    (also inside longer strings such as a command line or an error message), the checkout's
    root itself becomes ``.``, and paths under the home folder start with ``~/``."""
    prefixes = _path_prefixes() if prefixes is None else prefixes
    if isinstance(value, str):
        for prefix, repl in prefixes:
            if value == prefix.rstrip("/"):
                return "." if repl == "" else "~"
            if prefix in value:
                value = value.replace(prefix, repl)
        return value
    if isinstance(value, Mapping):
        return {k: portable(v, prefixes) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [portable(v, prefixes) for v in value]
    if isinstance(value, Path):
        return portable(str(value), prefixes)
    return value


#: Fields of records of schema <= 2 written before :func:`portable` that held a path of the
#: writer's machine, and nothing a reader needs: the cubin (``static.cubin_path``, also per
#: function), the compile-cache entry (``static.cache.entry``) and the ncu binary
#: (``ncu.ncu_path``).
MACHINE_PATH_KEYS = ("cubin_path", "entry", "ncu_path")


def drop_machine_paths(value: Any) -> Any:
    """``value`` with every :data:`MACHINE_PATH_KEYS` field that holds an absolute path set
    to None (the path named a file on the machine that wrote the record)."""
    if isinstance(value, dict):
        return {
            k: (
                None
                if k in MACHINE_PATH_KEYS and isinstance(v, str) and os.path.isabs(v)
                else drop_machine_paths(v)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [drop_machine_paths(v) for v in value]
    return value


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", s).strip("-").lower()[:40] or "x"


def write_record(record: dict[str, Any], root: Path | None = None) -> Path:
    """Write ``record`` as a new JSON file and return its path.

    ``record`` must hold ``kind``, ``package`` and ``kernel``. Adds ``schema`` and
    ``created_utc``. Paths of this machine are made portable (:func:`portable`: relative to
    the checkout's root, or ``~/``). The file is opened in exclusive-create mode: an existing
    file is never replaced.

    Raises:
        KernelPlanError: a required key is missing.
    """
    for key in ("kind", "package", "kernel"):
        if not record.get(key):
            raise KernelPlanError(f"a result record needs {key!r}")
    root = Path(root) if root is not None else results_root()
    now = _dt.datetime.now(_dt.timezone.utc)
    rec = {"schema": SCHEMA_VERSION, "created_utc": now.isoformat(timespec="seconds"), **record}
    dev = (rec.get("device") or {}).get("name") or "cpu"
    folder = root / _slug(rec["package"]) / _slug(rec["kernel"])
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise KernelPlanError(f"cannot create the record folder {folder}: {e}") from None
    stamp = now.strftime("%Y-%m-%dT%H-%M-%SZ")
    rec = portable(json.loads(json.dumps(rec, default=_json_default)))
    text = json.dumps(rec, indent=1, sort_keys=False) + "\n"
    for _ in range(8):
        path = folder / f"{stamp}-{_slug(dev)}-{_slug(rec['kind'])}-{secrets.token_hex(3)}.json"
        try:
            with open(path, "x", encoding="utf-8") as f:
                f.write(text)
            return path
        except FileExistsError:
            continue
    raise KernelPlanError(f"could not find a free record name under {folder}")


def _json_default(o: Any) -> Any:
    if hasattr(o, "to_dict"):
        return o.to_dict()
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)


def load_records(
    root: Path | None = None,
    package: str | None = None,
    kernel: str | None = None,
    kind: str | None = None,
) -> list[tuple[Path, dict]]:
    """All records under ``root`` (optionally of one package/kernel/kind), oldest first.

    Paths of the machine that wrote a record (older records' cubin, compile-cache entry and
    ncu binary) are dropped (:func:`drop_machine_paths`): no reader depends on them."""
    root = Path(root) if root is not None else results_root()
    base = root
    if package:
        base = base / _slug(package)
        if kernel:
            base = base / _slug(kernel)
    out = []
    for p in sorted(base.rglob("*.json")) if base.is_dir() else []:
        try:
            rec = json.loads(p.read_text())
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
            print(f"warning: skipping unreadable record {p}: {e}", file=sys.stderr)
            continue
        if not isinstance(rec, dict):
            print(f"warning: skipping {p}: not a JSON object", file=sys.stderr)
            continue
        if kind and rec.get("kind") != kind:
            continue
        out.append((p, drop_machine_paths(rec)))
    out.sort(key=lambda pr: (pr[1].get("created_utc", ""), str(pr[0])))
    return out


def record_problem_config(plan: Any, rec: dict[str, Any]) -> tuple[Any, Any] | None:
    """The (problem, config) dataclasses of a record of ``plan``, from any schema version, or
    None where they no longer parse (a field renamed since). Schema 1 configs carried
    ``sm_count``, now the target's: it is dropped here."""
    from .workload import ShapeError

    try:
        problem = plan.workload.problem(rec.get("problem") or {})
        cfg = {k: v for k, v in (rec.get("config") or {}).items() if k != "sm_count"}
        return problem, plan.config_type.from_dict(cfg)
    except (ShapeError, TypeError, ValueError):
        return None
