"""A persistent on-disk cache of static-analysis results and the cubins they were read from.

Why: compiling a CuTe DSL kernel for static analysis takes seconds, and importing the DSL and
torch to do it takes more (about 11 s on the 2-core CPU machine). A cache hit needs neither:
the key is computed from files and metadata alone, before the plan builds its kernel, so a
warm ``nox -s analyze`` never imports ``cutlass`` or ``torch``.

The key (see :func:`static_key`) is the sha256 of a canonical JSON object holding every input
the result depends on, so that a change of any of them misses:

- the cache format (``SCHEMA``) and the Python minor version (the DSL traces Python ASTs);
- the nvidia-cutlass-dsl version, and the cuobjdump used to read the cubin;
- the CUTLASS commit of the sources in use (``cutlass_src.source_commit``, or the pin);
- the example: sha256 of its file and of every module of the examples tree it imports,
  followed transitively (``helpers/fmha_helpers.py``, ``mla_helpers.py``, ...);
- the adapter: sha256 of the plan class's module, of the modules it imports from its own
  package (followed transitively), and of every class file of its MRO;
- the analyser: sha256 of the kernelplan modules that produce the result (``static``,
  ``sass``, ``kernel``, ``plan``);
- the kernel: package, name, upstream path, target SMs, the arch compiled for, the problem
  (shapes, dtypes), the config, and every tensor spec (shape, dtype, view, dynamic marks,
  alignment, spec class);
- the devices NVML sees (names), because an adapter may read the hardware when it plans
  (``max_active_clusters`` from ``cutlass.utils.HardwareInfo`` where the GPU matches);
- the ``CUTE_DSL_*`` environment variables that can change the code (all but the ones
  static analysis sets itself).

Layout: ``<root>/static/<key[:2]>/<key>/`` holds ``entry.json`` (``{"key", "components",
"result", "created_utc"}``), ``main.cubin`` and ``main.ptx`` (the DSL's own output for the
main module, kept so the numbers can be re-derived with any tool), and ``records.json`` (the
result records written from this entry). ``<root>`` is ``$KERNELPLAN_CACHE`` or
``.cache/kernelplan`` at the checkout's root (ignored by git); ``KERNELPLAN_CACHE=off``
disables the cache. Entries are written to a temporary folder and renamed into place, so a
reader never sees half an entry; an entry that does not parse, or whose key or components
differ from what was asked, is reported on stderr once and ignored (and replaced on the next
store).

What the DSL itself offers (nvidia-cutlass-dsl 4.8.1, checked in its sources): a file cache
of compiled modules (``CUTE_DSL_CACHE_DIR``, default ``/tmp/$USER/cutlass_python_cache``;
``CUTE_DSL_DISABLE_FILE_CACHING``), keyed by the hash of the traced MLIR module. A hit there
still traces the Python kernel (the hash is of the traced module) and still needs the DSL
imported; and every ``CUTE_DSL_KEEP`` setting (which static analysis needs for the cubin)
bypasses it. ``JitCompiledFunction.export_to_c(dir, name)`` writes a C header and an object
file that ``cutlass.runtime.load_module(path).<name>`` loads back as a compiled function,
without tracing (checked on the CPU for fp16_gemm_0 compiled for sm_100a with fake tensors:
a 2675-byte header and a 41816-byte object, loaded; calling it needs the GPU; a host
function whose ``stream`` parameter has no annotation fails the export). So this cache
keeps analysis results and cubins; a cache of launchable functions would export there and
load in ``CuteKernel.compile`` (not done here).

Misses in a package-wide run compile in parallel worker processes
(:func:`run_static_many`, ``$KERNELPLAN_JOBS``, default the CPU count, at most 4).

Command line: ``python -m kernelplan.cache info | clear | sweep <package>... [--mode ...]``
(``sweep`` times a full static analysis of the packages with a cold and then a warm cache,
prints the times, and writes a ``sweep-timing`` record; see :func:`sweep`).
"""

from __future__ import annotations

import ast
import datetime as _dt
import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import asdict, is_dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

#: Bump when the entry layout or the key's meaning changes.
SCHEMA = 1
CACHE_ENV = "KERNELPLAN_CACHE"
_OFF = {"off", "0", "no", "none", "false", "disable", "disabled"}
#: CUTE_DSL_* variables static analysis sets itself, or that do not change the code.
_ENV_IGNORED = {
    "CUTE_DSL_ARCH",
    "CUTE_DSL_KEEP",
    "CUTE_DSL_KEEP_PTX",
    "CUTE_DSL_KEEP_CUBIN",
    "CUTE_DSL_DUMP_DIR",
    "CUTE_DSL_CACHE_DIR",
    "CUTE_DSL_DISABLE_FILE_CACHING",
    "CUTE_DSL_LOG_LEVEL",
    "CUTE_DSL_LOG_TO_CONSOLE",
    "CUTE_DSL_LOG_TO_FILE",
}
#: kernelplan modules whose code produces a static result (this module's own changes show in
#: the key's components, or bump ``SCHEMA``).
ANALYSER_MODULES = ("static.py", "sass.py", "kernel.py", "plan.py")

_warned: set[str] = set()
_lock = threading.Lock()


def _warn_once(msg: str) -> None:
    with _lock:
        if msg in _warned:
            return
        _warned.add(msg)
    print(f"warning: {msg}", file=sys.stderr)


# --------------------------------------------------------------------------- where


def cache_root() -> Path | None:
    """``$KERNELPLAN_CACHE``, or ``.cache/kernelplan`` at the checkout's root; None when the
    variable says off (``off``, ``0``, ``none``, ...)."""
    env = os.environ.get(CACHE_ENV)
    if env is not None and env.strip().lower() in _OFF:
        return None
    if env:
        return Path(env).expanduser()
    from .cutlass_src import repo_root

    return repo_root() / ".cache" / "kernelplan"


# --------------------------------------------------------------------------- digests


_digest_memo: dict[tuple[str, int, int], str] = {}


def file_digest(path: str | os.PathLike) -> str:
    """sha256 of a file (memoised per path, size and mtime)."""
    p = Path(path)
    st = p.stat()
    memo_key = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    hit = _digest_memo.get(memo_key)
    if hit is None:
        hit = hashlib.sha256(p.read_bytes()).hexdigest()
        _digest_memo[memo_key] = hit
    return hit


def _module_candidates(base: Path, dotted: str) -> list[Path]:
    parts = [p for p in dotted.split(".") if p]
    if not parts:
        return [base / "__init__.py"]
    stem = base.joinpath(*parts)
    return [stem.with_suffix(".py"), stem / "__init__.py"]


def _imports_of(path: Path) -> list[tuple[int, str, list[str]]]:
    """(level, module, names) of every import statement in ``path`` (any nesting)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"), str(path))
    except SyntaxError:
        return []
    out: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(0, a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            out.append((node.level, node.module or "", [a.name for a in node.names]))
    return out


def import_closure(
    start: str | os.PathLike,
    roots: Iterable[str | os.PathLike],
    within: Iterable[str | os.PathLike] | None = None,
) -> list[Path]:
    """``start`` and every Python file it imports, transitively, that lies under one of
    ``within`` (default: ``roots``). Absolute imports are resolved against each of
    ``roots`` (the folders that would be on ``sys.path``), relative imports against the
    importing file's package. Files elsewhere (the DSL, torch, the standard library) are not
    followed: their versions are keyed separately."""
    roots = [Path(r).resolve() for r in roots]
    inside = [Path(r).resolve() for r in within] if within is not None else roots
    first = Path(start).resolve()
    seen: set[Path] = set()
    todo = [first]
    while todo:
        f = todo.pop()
        if f in seen or not f.is_file():
            continue
        seen.add(f)
        for level, module, names in _imports_of(f):
            if level:
                base = f.parent
                for _ in range(level - 1):
                    base = base.parent
                bases = [base]
            else:
                bases = roots
            for b in bases:
                cands = _module_candidates(b, module)
                cands += [c for n in names for c in _module_candidates(b, f"{module}.{n}")]
                for c in cands:
                    rc = c.resolve()
                    if rc.is_file() and any(rc.is_relative_to(r) for r in inside):
                        todo.append(rc)
    return sorted(seen)


def _rel(p: Path, base: Path) -> str:
    try:
        return p.relative_to(base).as_posix()
    except ValueError:
        return p.as_posix()


def example_digests(relpath: str) -> dict[str, str]:
    """Example path -> sha256 for the example and every examples-tree module it imports
    (paths relative to ``examples/python/CuTeDSL``).

    Raises:
        CutlassSourcesMissing / KernelPlanError: as :func:`kernelplan.cutlass_src.example_path`.
    """
    from .cutlass_src import example_path, examples_dir

    root = examples_dir().resolve()
    path = example_path(relpath).resolve()
    files = import_closure(path, [path.parent, root / "cute", root], [root])
    return {_rel(f, root): file_digest(f) for f in files}


def _class_files(cls: type) -> list[Path]:
    out = []
    for c in cls.__mro__:
        if c.__module__.split(".")[0] in getattr(sys, "stdlib_module_names", ("abc",)):
            continue
        mod = sys.modules.get(c.__module__)
        f = getattr(mod, "__file__", None)
        if f and f.endswith(".py"):
            out.append(Path(f).resolve())
    return out


def adapter_digests(cls: type) -> dict[str, str]:
    """File -> sha256 for the plan class's module, the modules it imports from its own
    top-level package (transitively), and every class file of its MRO."""
    mod = sys.modules.get(cls.__module__)
    f = getattr(mod, "__file__", None)
    files: set[Path] = set(_class_files(cls))
    if f:
        top = cls.__module__.split(".")[0]
        top_mod = sys.modules.get(top)
        top_file = getattr(top_mod, "__file__", None)
        src_root = Path(top_file).resolve().parent.parent if top_file else Path(f).parent
        files.update(import_closure(f, [src_root], [src_root / top]))
    from .cutlass_src import repo_root

    base = repo_root().resolve()
    return {_rel(p, base): file_digest(p) for p in sorted(files)}


def analyser_digests() -> dict[str, str]:
    here = Path(__file__).resolve().parent
    return {name: file_digest(here / name) for name in ANALYSER_MODULES}


@cache
def _dist_version(dist: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:
        return None


@lru_cache(maxsize=1)
def _cutlass_commit() -> str:
    from .cutlass_src import PINNED_COMMIT, source_commit

    return source_commit() or f"pinned:{PINNED_COMMIT}"


def _tool_identity(name: str) -> str | None:
    """Version (from its wheel) and path of a CUDA tool, or None when it is missing."""
    from .static import TOOL_PACKAGES, ToolMissingError, find_tool

    try:
        path = find_tool(name)
    except ToolMissingError:
        return None
    ver = _dist_version(TOOL_PACKAGES.get(name, name))
    return f"{ver or 'unknown'}@{path}:{path.stat().st_size}"


@lru_cache(maxsize=1)
def device_fingerprint() -> str:
    """Names of the GPUs NVML sees, or ``"none"`` (no driver or no NVML): cheap, no torch."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return "none"
    try:
        n = pynvml.nvmlDeviceGetCount()
        names = []
        for i in range(n):
            name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))
            names.append(name.decode() if isinstance(name, bytes) else str(name))
        return ",".join(names) or "none"
    except Exception:
        return "unknown"


def _dsl_env() -> dict[str, str]:
    return {
        k: v
        for k, v in sorted(os.environ.items())
        if k.startswith("CUTE_DSL_") and k not in _ENV_IGNORED
    }


def _plain(v: Any) -> Any:
    """JSON-ready form of config/problem/spec values (tuples as lists, dataclasses as dicts)."""
    if is_dataclass(v) and not isinstance(v, type):
        return {"__class__": type(v).__qualname__, **_plain(asdict(v))}
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return repr(v)


def static_key(plan: Any, problem: Any, config: Any, target: Any) -> tuple[str, dict[str, Any]]:
    """(key, components) for the static analysis of ``plan`` at (problem, config, target):
    the workload's problem, the implementation's config, a :class:`kernelplan.device.Target`.

    Needs no DSL and no torch; reads the example and adapter files (digests memoised).

    Raises:
        KernelPlanError: the CUTLASS sources are missing or lack the example.
    """
    cls = type(plan)
    comps: dict[str, Any] = {
        "schema": SCHEMA,
        "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
        "nvidia_cutlass_dsl": _dist_version("nvidia-cutlass-dsl"),
        "cuobjdump": _tool_identity("cuobjdump"),
        "cutlass_commit": _cutlass_commit(),
        "example": {
            "path": plan.source,
            "files": example_digests(plan.source) if plan.source else {},
        },
        "adapter": {"class": f"{cls.__module__}:{cls.__qualname__}", "files": adapter_digests(cls)},
        "analyser": analyser_digests(),
        "kernel": {
            "package": plan.package,
            "name": plan.name,
            "target_sm": list(plan.target_sm),
            "arch": target.sm,
            "sm_count": target.sm_count,
            "problem": _plain(problem.to_dict()),
            "config": _plain(config.to_dict()),
            "specs": _plain(plan.tensor_specs(problem)),
        },
        "devices": device_fingerprint(),
        "cute_dsl_env": _dsl_env(),
    }
    text = json.dumps(comps, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest(), comps


# --------------------------------------------------------------------------- the store


class StaticCache:
    """The on-disk store (see the module docstring). ``enabled`` is False when the cache is
    switched off; every method is then a no-op returning None."""

    ENTRY = "entry.json"
    RECORDS = "records.json"

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root) if root is not None else cache_root()

    @property
    def enabled(self) -> bool:
        return self.root is not None

    def entry_dir(self, key: str) -> Path:
        assert self.root is not None
        return self.root / "static" / key[:2] / key

    # -- read ---------------------------------------------------------------------------
    def get(self, key: str, components: Mapping[str, Any] | None = None) -> dict | None:
        """The stored result for ``key`` (its ``cubin_path`` pointing at the cached cubin),
        or None on a miss. A corrupt or mismatched entry is reported once and ignored."""
        if not self.enabled:
            return None
        d = self.entry_dir(key)
        f = d / self.ENTRY
        if not f.is_file():
            return None
        try:
            entry = json.loads(f.read_text(encoding="utf-8"))
            if not isinstance(entry, dict) or entry.get("key") != key:
                raise ValueError("key mismatch")
            if entry.get("schema") != SCHEMA:
                raise ValueError(f"schema {entry.get('schema')} != {SCHEMA}")
            if components is not None and entry.get("components") != json.loads(
                json.dumps(components)
            ):
                raise ValueError("components differ from the key's")
            result = entry["result"]
            if not isinstance(result, dict) or "registers" not in result:
                raise ValueError("no result")
        except (OSError, ValueError, KeyError, TypeError) as e:
            _warn_once(f"ignoring corrupt compile-cache entry {d}: {e}")
            return None
        cubin = d / "main.cubin"
        if cubin.is_file():
            result = _with_cubin(result, str(cubin))
        return result

    # -- write --------------------------------------------------------------------------
    def put(
        self,
        key: str,
        components: Mapping[str, Any],
        result: Mapping[str, Any],
        files: Mapping[str, str | os.PathLike | None] | None = None,
    ) -> dict | None:
        """Store ``result`` (and copies of ``files``: name -> path, e.g. ``main.cubin``)
        under ``key``; returns the result as stored (``cubin_path`` rewritten to the cached
        copy), or None when disabled or the store failed (reported, not fatal)."""
        if not self.enabled:
            return None
        final = self.entry_dir(key)
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{key[:12]}-", dir=final.parent))
            tmp.chmod(0o755)  # mkdtemp makes it private; entries are plain cache files
            stored = dict(result)
            for name, src in (files or {}).items():
                if src and Path(src).is_file():
                    shutil.copy2(src, tmp / name)
            if (tmp / "main.cubin").is_file():
                stored = _with_cubin(stored, str(final / "main.cubin"))
            entry = {
                "schema": SCHEMA,
                "key": key,
                "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "components": components,
                "result": stored,
            }
            (tmp / self.ENTRY).write_text(
                json.dumps(entry, indent=1, default=str) + "\n", encoding="utf-8"
            )
            if final.exists():  # a corrupt entry, or a concurrent writer: replace it
                shutil.rmtree(final, ignore_errors=True)
            try:
                os.replace(tmp, final)
            except OSError:
                shutil.rmtree(tmp, ignore_errors=True)
                if not (final / self.ENTRY).is_file():
                    raise
            return stored
        except OSError as e:
            _warn_once(f"compile cache not written ({final}): {e}")
            return None

    # -- records written from an entry ----------------------------------------------------
    def records(self, key: str) -> list[str]:
        if not self.enabled:
            return []
        f = self.entry_dir(key) / self.RECORDS
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
            return [str(x) for x in data] if isinstance(data, list) else []
        except (OSError, ValueError):
            return []

    def record_under(self, key: str, results_root: str | os.PathLike) -> Path | None:
        """A result record written earlier from this entry that still exists under
        ``results_root`` (so a warm run need not write the same numbers again)."""
        root = Path(results_root).resolve()
        for r in reversed(self.records(key)):
            p = Path(r)
            if p.is_file() and p.resolve().is_relative_to(root):
                return p
        return None

    def note_record(self, key: str, path: str | os.PathLike) -> None:
        if not self.enabled:
            return
        d = self.entry_dir(key)
        if not d.is_dir():
            return
        recs = self.records(key)
        recs.append(str(Path(path).resolve()))
        tmp = d / f".records-{os.getpid()}.tmp"
        try:
            tmp.write_text(json.dumps(recs, indent=1) + "\n", encoding="utf-8")
            os.replace(tmp, d / self.RECORDS)
        except OSError as e:
            _warn_once(f"compile cache: could not note record in {d}: {e}")

    # -- housekeeping -------------------------------------------------------------------
    def entries(self) -> list[Path]:
        if not self.enabled or not (self.root / "static").is_dir():
            return []
        return sorted(p.parent for p in (self.root / "static").glob("*/*/" + self.ENTRY))

    def clear(self) -> int:
        """Remove every entry; returns how many there were."""
        n = len(self.entries())
        if self.enabled and (self.root / "static").is_dir():
            shutil.rmtree(self.root / "static")
        return n


#: What makes two static results the same measurement (compile time and paths excluded).
_SAME_FIELDS = (
    "kernel",
    "arch",
    "registers",
    "spill_store_bytes",
    "spill_load_bytes",
    "stack_bytes",
    "local_bytes",
    "static_smem_bytes",
    "dynamic_smem_bytes",
    "cubin_bytes",
    "instructions",
    "categories",
    "opcodes",
    "mma_mnemonics",
    "barriers",
    "max_active_clusters",
)


def matching_static_record(
    results_root: str | os.PathLike,
    plan: Any,
    problem: Any,
    config: Any,
    result: Mapping[str, Any],
) -> Path | None:
    """An existing ``static`` record under ``results_root`` of the same kernel, problem,
    config, DSL version and CUTLASS commit whose footprint equals ``result`` (compile time and
    file paths aside): the same measurement, so a fresh compile need not be recorded again.
    The newest such record, or None. Records of every schema are read
    (:func:`kernelplan.records.record_problem_config`)."""
    from .records import load_records, record_problem_config

    want = {k: result.get(k) for k in _SAME_FIELDS}
    want_fns = [{k: f.get(k) for k in _SAME_FIELDS} for f in result.get("functions") or []]
    for path, rec in reversed(
        load_records(results_root, package=plan.package, kernel=plan.name, kind="static")
    ):
        st = rec.get("static") or {}
        env = rec.get("env") or {}
        if (
            record_problem_config(plan, rec) == (problem, config)
            and rec.get("source") == plan.source
            and env.get("nvidia_cutlass_dsl") == _dist_version("nvidia-cutlass-dsl")
            and env.get("cutlass_commit_sources") in (_cutlass_commit(), None)
            and {k: st.get(k) for k in _SAME_FIELDS} == want
            and [{k: f.get(k) for k in _SAME_FIELDS} for f in st.get("functions") or []] == want_fns
        ):
            return path
    return None


def _with_cubin(result: Mapping[str, Any], cubin: str) -> dict[str, Any]:
    out = dict(result)
    out["cubin_path"] = cubin
    if isinstance(out.get("functions"), list):
        out["functions"] = [
            {**f, "cubin_path": cubin} if isinstance(f, dict) else f for f in out["functions"]
        ]
    return out


# --------------------------------------------------------------------------- many at once

JOBS_ENV = "KERNELPLAN_JOBS"


def default_jobs() -> int:
    """Worker processes for cache misses: ``$KERNELPLAN_JOBS``, else the CPU count (at most
    4: each worker imports the DSL, about 0.5 GB)."""
    env = os.environ.get(JOBS_ENV)
    if env and env.strip().isdigit():
        return max(1, int(env))
    return max(1, min(os.cpu_count() or 1, 4))


def _static_job(package: str, kernel: str, problem: dict, config: dict, target: dict) -> dict:
    from .device import Target
    from .registry import load_plan_class

    plan = load_plan_class(package, kernel)()
    return plan.run_static(
        plan.problem(problem), plan.config_type.from_dict(config), Target(**target)
    )


def run_static_many(items: list[tuple[Any, Any, Any, Any]], *, jobs: int | None = None):
    """``plan.run_static(problem, config, target)`` for each ``(plan, problem, config,
    target)``, yielding
    ``(index, result or KernelPlanError, seconds)`` in order.

    Cache hits are answered here at once. Misses are compiled in up to ``jobs`` worker
    processes (default :func:`default_jobs`; forked, Linux only, else one at a time), each
    importing the DSL once; with one miss, or one job, they run in this process. A plan
    that is not from a registered package (``registry.load_plan_class`` cannot find it by
    package and name) also runs here.
    """
    import time

    from .errors import KernelPlanError
    from .registry import load_plan_class

    jobs = default_jobs() if jobs is None else max(1, jobs)
    store = StaticCache()
    hits: dict[int, bool] = {}
    for i, (plan, prob, cfg, tgt) in enumerate(items):
        try:
            if store.enabled and plan.target_sm:
                key, comps = static_key(plan, prob, cfg, tgt)
                hits[i] = store.get(key, comps) is not None
        except KernelPlanError:
            hits[i] = False

    def registered(plan) -> bool:
        try:
            return load_plan_class(plan.package, plan.name) is type(plan)
        except Exception:
            return False

    misses = [i for i in range(len(items)) if not hits.get(i) and registered(items[i][0])]
    pool = None
    futures: dict[int, Any] = {}
    if len(misses) > 1 and jobs > 1 and sys.platform.startswith("linux"):
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        workers = min(jobs, len(misses))
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("fork"))
        for i in misses:
            plan, prob, cfg, tgt = items[i]
            fut = pool.submit(
                _static_job, plan.package, plan.name, prob.to_dict(), cfg.to_dict(), tgt.to_dict()
            )
            futures[i] = (time.perf_counter(), fut)
    try:
        for i, (plan, prob, cfg, tgt) in enumerate(items):
            t0 = time.perf_counter()
            try:
                if i in futures:
                    t0, fut = futures[i]
                    res = fut.result()
                else:
                    res = plan.run_static(prob, cfg, tgt)
            except KernelPlanError as e:
                yield i, e, time.perf_counter() - t0
                continue
            yield i, res, time.perf_counter() - t0
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


# --------------------------------------------------------------------------- sweep timing


def _sweep_once(packages: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    """Run ``python -m kernelplan analyze <pkg>`` for each package, as ``nox -s analyze``
    does; returns (wall seconds of all of them, number of failing runs, combined output)."""
    import subprocess
    import time

    total, failed, out = 0.0, 0, []
    for pkg in packages:
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "kernelplan", "analyze", pkg],
            env=env,
            capture_output=True,
            text=True,
        )
        total += time.perf_counter() - t0
        failed += proc.returncode != 0
        out.append(proc.stdout + proc.stderr)
    return total, failed, "\n".join(out)


def _loadavg() -> list[float] | None:
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


#: How Python treats bytecode in a sweep: "as-configured" leaves the environment alone;
#: "bytecode-cached" lets Python cache compiled modules (its default behaviour) in a folder
#: of the kernelplan cache, warmed before timing, for hosts that set PYTHONDONTWRITEBYTECODE
#: (then every process recompiles torch and the DSL from source: about 12 s more each).
SWEEP_MODES = ("as-configured", "bytecode-cached")


def sweep(
    packages: list[str], *, modes: tuple[str, ...] = SWEEP_MODES, record: bool = True, log=print
) -> dict[str, Any]:
    """Time the full static analysis of ``packages`` with an empty compile cache (cold), then
    again with the cache that run filled (warm), once per mode of :data:`SWEEP_MODES`.

    Each run uses fresh temporary cache and results folders (the committed ``results/`` and
    the user's cache are not touched), one ``python -m kernelplan analyze <pkg>`` process per
    package. Prints the times; with ``record`` writes one ``sweep-timing`` record (package
    ``kernelplan``, kernel ``static-sweep``) holding every mode's numbers and the host load.
    """
    import platform
    import re
    import subprocess

    from .records import environment, write_record

    runs: dict[str, Any] = {}
    failed_any = False
    for mode in modes:
        if mode not in SWEEP_MODES:
            raise ValueError(f"unknown sweep mode {mode!r} (one of {', '.join(SWEEP_MODES)})")
        with tempfile.TemporaryDirectory(prefix="kp-sweep-") as tmp:
            env = dict(os.environ)
            env[CACHE_ENV] = str(Path(tmp) / "cache")
            env["KERNELPLAN_RESULTS"] = str(Path(tmp) / "results")
            if mode == "bytecode-cached":
                env.pop("PYTHONDONTWRITEBYTECODE", None)
                root = cache_root() or Path(tmp)
                env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
                warm_imports = "import torch, cutlass.cute, kernelplan.sessions, kernelplan.static"
                warm_imports += "".join(
                    f"; import importlib; importlib.import_module("
                    f"'cute_' + {p!r}.replace('-', '_'))"
                    for p in packages
                )
                subprocess.run([sys.executable, "-c", warm_imports], env=env, check=False)
            load_before = _loadavg()
            cold, cold_failed, cold_out = _sweep_once(packages, env)
            load_mid = _loadavg()
            warm, warm_failed, warm_out = _sweep_once(packages, env)
            n_cached = len(StaticCache(env[CACHE_ENV]).entries())
        rows = len(re.findall(r"^\| `", cold_out, flags=re.M))
        warm_hits = sum(int(n) for n in re.findall(r"\((\d+) from the compile cache", warm_out))
        log(f"{mode}: cold sweep ({', '.join(packages)}, {n_cached} kernels): {cold:.1f} s")
        log(f"{mode}: warm sweep ({', '.join(packages)}, {n_cached} kernels): {warm:.1f} s")
        runs[mode] = {
            "cold_seconds": round(cold, 2),
            "warm_seconds": round(warm, 2),
            "kernels": n_cached,
            "table_rows": rows,
            "warm_hits": warm_hits,
            "cold_failed_runs": cold_failed,
            "warm_failed_runs": warm_failed,
            "load_average_before_cold": load_before,
            "load_average_before_warm": load_mid,
            "load_average_after": _loadavg(),
        }
        if warm_hits != rows:
            log(
                f"{mode}: warning: the warm run compiled {rows - warm_hits} kernel(s) again "
                "(a source they depend on changed during the sweep?): its time is not a warm time"
            )
            failed_any = True
        if cold_failed or warm_failed:
            failed_any = True
            log((cold_out + warm_out)[-4000:])
    result = {
        "packages": packages,
        "runs": runs,
        "goal_cold_seconds": 60,
        "goal_warm_seconds": 10,
        "cpu_count": os.cpu_count(),
        "jobs": default_jobs(),
        "machine": platform.machine(),
        "pythondontwritebytecode": os.environ.get("PYTHONDONTWRITEBYTECODE"),
        "failed": failed_any,
        "how": "python -m kernelplan analyze <pkg>, one process per package, as nox -s analyze "
        "runs it; cold: empty compile cache and results folder; warm: the same again with the "
        "cache the cold run filled",
    }
    log("goals: cold <= 60 s, warm <= 10 s")
    if record and failed_any:
        log("not recorded: a run failed or the warm run was not warm")
    elif record:
        rec = {
            "kind": "sweep-timing",
            "package": "kernelplan",
            "kernel": "static-sweep",
            "source": None,
            "device": None,
            "env": environment(),
            "sweep": result,
        }
        path = write_record(rec)
        log(f"record: {path}")
        result["record"] = str(path)
    return result


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(
        prog="python -m kernelplan.cache", description="the static-analysis compile cache"
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="where the cache is and how many entries it holds")
    sub.add_parser("clear", help="remove every entry")
    s = sub.add_parser("sweep", help="time a cold and a warm static sweep of packages")
    s.add_argument("packages", nargs="+")
    s.add_argument("--mode", choices=SWEEP_MODES, action="append", help="default: both")
    s.add_argument("--no-record", action="store_true")
    a = p.parse_args(argv)
    store = StaticCache()
    if a.cmd == "info":
        print(f"cache: {store.root or 'off'} ({len(store.entries())} entries)")
        return 0
    if a.cmd == "clear":
        print(f"removed {store.clear()} entries from {store.root or 'nothing (cache off)'}")
        return 0
    res = sweep(a.packages, modes=tuple(a.mode or SWEEP_MODES), record=not a.no_record)
    return 1 if res["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
