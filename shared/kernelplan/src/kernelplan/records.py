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
    if root.exists() and not root.is_dir():
        raise KernelPlanError(
            f"cannot write result records under {root}: it is a file, not a folder; choose "
            "another --results-dir (or KERNELPLAN_RESULTS), or pass --no-record"
        )
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


def write_experiment(
    kernel: str,
    source: str,
    config: dict[str, Any],
    result: dict[str, Any],
    device: dict[str, Any] | None = None,
) -> Path:
    """Write the record of an experiment script (``scripts/experiments/``): kind
    ``experiment``, package ``experiments``, ``kernel`` its name, ``source`` the script's path
    in the checkout, the environment, and its ``config`` and ``result``; ``device`` defaults to
    ``{"name": "cpu"}`` (a script that only compiles). Returns the path
    (:func:`write_record`)."""
    return write_record(
        {
            "kind": "experiment",
            "package": "experiments",
            "kernel": kernel,
            "source": source,
            "device": device if device is not None else {"name": "cpu"},
            "env": environment(),
            "config": config,
            "result": result,
        }
    )


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


# ---------------------------------------------------------------------------------------------
# Merging records that come back from another machine (a GPU runner's artifact)


def _pins() -> dict[str, str]:
    """The ``env`` fields a merged record must share with this checkout, and their values."""
    from .cutlass_src import PINNED_COMMIT, PINNED_DSL

    return {"cutlass_commit_pinned": PINNED_COMMIT, "nvidia_cutlass_dsl": PINNED_DSL}


def _record_refusal(rec: Any) -> str | None:
    """Why a parsed JSON file may not be merged as a record, or None when it may."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    missing = [k for k in ("kind", "package", "kernel") if not rec.get(k)]
    if missing:
        return f"not a result record (no {', '.join(missing)})"
    fields = ("kind", "package", "kernel")
    typed = [f"{k} {rec[k]!r}" for k in fields if not isinstance(rec[k], str)]
    if typed:  # package and kernel name the folder the record goes to
        return f"not a result record ({', '.join(typed)}: not a string)"
    if rec.get("schema") != SCHEMA_VERSION:
        return f"schema {rec.get('schema')!r}, this checkout writes schema {SCHEMA_VERSION}"
    env = rec.get("env") if isinstance(rec.get("env"), dict) else {}
    for key, want in _pins().items():
        got = env.get(key)
        if got != want:
            return f"env.{key} is {got!r}, this checkout pins {want!r}"
    return None


def _extracted(source: Path, tmp: Path) -> Path:
    """``source`` itself when it is a folder, else the archive (.tgz, .tar.gz, .tar, .zip)
    unpacked under ``tmp``.

    Raises:
        KernelPlanError: neither a folder nor a readable archive.
    """
    import tarfile
    import zipfile

    if source.is_dir():
        return source
    if not source.is_file():
        raise KernelPlanError(f"merge: {source} is neither a folder nor an archive")
    out = tmp / "unpacked"
    out.mkdir()
    try:
        if zipfile.is_zipfile(source):
            with zipfile.ZipFile(source) as z:
                z.extractall(out)  # zipfile drops absolute paths and ".." itself
        elif tarfile.is_tarfile(source):
            with tarfile.open(source) as t:
                if hasattr(tarfile, "data_filter"):
                    t.extractall(out, filter="data")
                else:  # pragma: no cover - Python without tar filters (< 3.10.12)
                    for m in t.getmembers():
                        if m.name.startswith("/") or ".." in Path(m.name).parts:
                            raise KernelPlanError(f"merge: unsafe path {m.name!r} in {source}")
                    t.extractall(out)
        else:
            raise KernelPlanError(f"merge: {source} is not a .tgz, .tar or .zip archive")
    except (OSError, tarfile.TarError, zipfile.BadZipFile) as e:
        raise KernelPlanError(f"merge: cannot unpack {source}: {e}") from None
    return out


def _source_root(top: Path, records: list[tuple[Path, dict]]) -> Path:
    """The folder that plays the part of ``results/`` in what is merged: where the records
    sit as ``<package>/<kernel>/<file>.json`` (the most common such folder), else ``top``
    less any folders that only wrap one other folder (an archive's ``records/``)."""
    from collections import Counter

    roots: Counter[Path] = Counter()
    for path, rec in records:
        if (
            len(path.relative_to(top).parts) >= 3
            and path.parent.name == _slug(rec["kernel"])
            and path.parent.parent.name == _slug(rec["package"])
        ):
            roots[path.parents[2]] += 1
    if roots:
        return roots.most_common(1)[0][0]
    root = top
    while True:
        entries = [p for p in root.iterdir() if not p.name.startswith(".")]
        if len(entries) == 1 and entries[0].is_dir() and entries[0].name != "gpu-ci":
            root = entries[0]
            continue
        return root


def merge_records(
    source: Path | str, into: Path | str | None = None, *, log=print
) -> dict[str, Any]:
    """Merge result records (and the files that go with them) from ``source``, a folder or
    an archive a GPU runner produced, into ``into`` (default :func:`results_root`).

    Nothing under ``into`` is ever replaced: a file whose name is taken is skipped when its
    contents are the same and refused when they differ. A record (a JSON file with ``kind``,
    ``package`` and ``kernel``) goes to ``<package>/<kernel>/`` under its own name, as
    :func:`write_record` would have put it, and is refused when its ``schema`` is not
    :data:`SCHEMA_VERSION` or its pinned commits (``env.cutlass_commit_pinned``,
    ``env.nvidia_cutlass_dsl``) are not this checkout's. Other files (Nsight Compute
    reports, ``gpu-ci/`` summaries, logs) keep their path relative to the records' folder.
    Each refusal is one line; the last line sums up.

    Returns:
        ``{"merged": [...], "identical": [...], "refused": [(path, why), ...]}`` (paths of
        the source files).

    Raises:
        KernelPlanError: the source cannot be read, or ``into`` cannot be written.
    """
    import shutil
    import tempfile

    into_root = Path(into) if into is not None else results_root()
    ensure_writable(into_root)
    out: dict[str, Any] = {"merged": [], "identical": [], "refused": []}
    with tempfile.TemporaryDirectory(prefix="kernelplan-merge-") as tmp:
        src = Path(source)
        top = _extracted(src, Path(tmp))
        files = sorted(p for p in top.rglob("*") if p.is_file() and not p.is_symlink())
        records: list[tuple[Path, dict]] = []
        plans: list[tuple[Path, Path | None, str | None]] = []  # (file, destination, refusal)
        others: list[Path] = []
        for p in files:
            if p.suffix != ".json" or "gpu-ci" in p.relative_to(top).parts:
                others.append(p)
                continue
            try:
                rec = json.loads(p.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
                plans.append((p, None, f"unreadable JSON ({e})"))
                continue
            why = _record_refusal(rec)
            if why is not None:
                plans.append((p, None, why))
                continue
            records.append((p, rec))
            dest = into_root / _slug(rec["package"]) / _slug(rec["kernel"]) / p.name
            plans.append((p, dest, None))
        root = _source_root(top, records)
        for p in others:
            try:
                rel = p.relative_to(root)
            except ValueError:
                plans.append((p, None, f"outside the records' folder {root.relative_to(top)}"))
                continue
            plans.append((p, into_root / rel, None))

        def shown(p: Path) -> str:
            return str(src / p.relative_to(top)) if top == src else f"{src}:{p.relative_to(top)}"

        for p, dest, why in sorted(plans, key=lambda t: str(t[0])):
            if why is None and dest is not None and dest.exists():
                if dest.is_file() and dest.read_bytes() == p.read_bytes():
                    out["identical"].append(shown(p))
                    continue
                why = f"{dest} exists with other contents (never overwritten)"
            if why is not None:
                out["refused"].append((shown(p), why))
                log(f"refused {shown(p)}: {why}")
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                with open(p, "rb") as fin, open(dest, "xb") as fout:  # exclusive: no overwrite
                    shutil.copyfileobj(fin, fout)
            except FileExistsError:  # appeared meanwhile (another merge): compare again
                if dest.read_bytes() == p.read_bytes():
                    out["identical"].append(shown(p))
                else:
                    why = f"{dest} exists with other contents (never overwritten)"
                    out["refused"].append((shown(p), why))
                    log(f"refused {shown(p)}: {why}")
                continue
            out["merged"].append(shown(p))
    log(merge_summary(out, into_root))
    return out


def merge_summary(result: dict[str, Any], into: Path | str) -> str:
    """``merged 12, identical 3, refused 2 (1 schema, 1 other contents) into results``."""
    from collections import Counter

    reasons: Counter[str] = Counter()
    for _p, why in result["refused"]:
        if why.startswith("schema"):
            reasons["schema"] += 1
        elif why.startswith("env."):
            reasons["pinned commits"] += 1
        elif "exists with other contents" in why:
            reasons["other contents"] += 1
        else:
            reasons["not a record"] += 1
    refused = len(result["refused"])
    order = ("schema", "pinned commits", "other contents", "not a record")
    detail = ", ".join(f"{reasons[r]} {r}" for r in order if reasons[r])
    detail = f" ({detail})" if refused else ""
    return (
        f"merged {len(result['merged'])}, identical {len(result['identical'])}, "
        f"refused {refused}{detail} into {into}"
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m kernelplan.records merge <folder or archive> [--into results/]``"""
    import argparse

    p = argparse.ArgumentParser(prog="python -m kernelplan.records")
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser(
        "merge",
        help="merge records from a runner (folder, .tgz, .tar or .zip) without overwriting",
    )
    m.add_argument("source", nargs="+", help="a folder or an archive of records")
    m.add_argument("--into", default=None, help="the results folder (default: results/)")
    a = p.parse_args(argv)
    refused = 0
    try:
        for s in a.source:
            refused += len(merge_records(s, a.into)["refused"])
    except KernelPlanError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
