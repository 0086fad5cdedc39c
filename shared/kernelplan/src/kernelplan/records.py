"""Result records: one JSON file per run under ``results/<package>/<kernel>/``.

Files are created with exclusive mode and a unique name (UTC time, device, kind, random
suffix), so a record is never overwritten; nothing here deletes or rewrites one. Every record
carries the environment that produced it (device, SM, clocks seen, driver, DSL version,
CUTLASS commit, torch, host) beside its config, problem, timings and check result.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import secrets
import sys
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


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", s).strip("-").lower()[:40] or "x"


def write_record(record: dict[str, Any], root: Path | None = None) -> Path:
    """Write ``record`` as a new JSON file and return its path.

    ``record`` must hold ``kind``, ``package`` and ``kernel``. Adds ``schema`` and
    ``created_utc``. The file is opened in exclusive-create mode: an existing file is never
    replaced.

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
    text = json.dumps(rec, indent=1, sort_keys=False, default=_json_default) + "\n"
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
    """All records under ``root`` (optionally of one package/kernel/kind), oldest first."""
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
        out.append((p, rec))
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
