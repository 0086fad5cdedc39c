"""A persistent cache of compiled CuTe DSL functions, so that a second process launching the
same kernel loads it (milliseconds) instead of tracing and compiling it again (seconds).

It goes through the DSL's own ahead-of-time path (nvidia-cutlass-dsl 4.8.1):
``JitCompiledFunction.export_to_c(dir, name, function_prefix)`` writes ``<name>.o`` (the
host entry, the cubin and metadata: the Python signature, the kernel names, an object-format
version) and ``<name>.h``; ``cutlass.cute.runtime.load_module(path)[prefix]`` links the
object in memory (LLVM JITLink) and returns a ``CudaDialectJitCompiledFunction`` called
exactly like the one ``cute.compile`` returns. Functions compiled with
``options="--enable-tvm-ffi"`` export through their own ``export_to_c(path.o,
function_name=...)`` and load back with ``load_module(path, enable_tvm_ffi=True)`` as a
``tvm_ffi.Function``; both kinds are handled here.

What was checked on the CPU (no GPU, no driver; compiled for ``sm_90a`` with
``CUTE_DSL_ARCH``): export works from fake tensors and from ``from_dlpack`` tensors; loading
and looking the function up work without a GPU (the CUDA library is loaded lazily, on the
first call, which then needs the driver: ``cudaErrorInsufficientDriver`` here). So on the
CPU a hit is fully exercised up to the launch. hopper_dense_gemm (default config, fake
tensors, sm_90a) on the 2-core CPU machine: miss 0.63 s compile + 0.08 s export (a 28664-byte
object); hit in a new process 0.004 s to load. Launching a loaded function on the H200 is
what ``scripts/experiments/jit_cache_first_launch.py`` checks (not run yet).

Limits of the DSL's path (its sources):

- every argument of the host function must be of a kind the C-header generator knows
  (``cute.Tensor``, shapes/strides/coords, ``cuda.CUstream``, the integer and float
  scalars): a ``stream`` parameter without a ``cuda.CUstream`` annotation fails the export
  ("Unsupported argument ... stream = FakeStream with type annotation inspect._empty"), and
  the tests' ``axpby`` kernel has one; custom types are not supported;
- ``CUTE_DSL_COMPILER_BACKEND=cutlass`` returns a function whose ``export_to_c`` raises
  NotImplementedError (the default ``legacy`` backend exports);
- the object's embedded version is the object *format* (``"1.0"``/``"1.1"``), not the DSL
  release, so the DSL would load an object written by another release: this cache keys the
  DSL version itself;
- a host function with no runtime argument cannot be exported.

An export failure is not an error: the compiled function is returned and used, and one
warning line says why it was not stored.

The key (:func:`jit_components`) is the sha256 of a canonical JSON object: the caller's
``key`` (implementation, config, tensor signature, SM), ``options``, ``arch``, the cache
schema, the Python minor version, the nvidia-cutlass-dsl version, the CUTLASS commit and the
``CUTE_DSL_*`` environment (:mod:`kernelplan.cache`'s helpers), the DSL runtime library in
use (cu12/cu13), the host machine (the object is native host code), the function's qualified
name, the sha256 of its source file and of the files it imports from its own folder (or from
the CUTLASS examples tree, for an example), and the kinds of the compile arguments (types,
and the values of plain Python constants, which are compile-time).

Layout: ``<root>/<dsl version>-<commit[:12]>/<arch>/<sha256>/`` holds ``module.o``,
``module.h`` and ``entry.json`` (components, symbol prefix, ABI, sha256 and size of the
object). ``<root>`` is ``directory`` if given, else ``$KERNELPLAN_CACHE/jit`` when that
variable names a folder, else ``.cache/jit`` at the checkout's root (ignored by git).
``KERNELPLAN_CACHE=off`` (as for the static cache) compiles every time and stores nothing.
Entries are written to a temporary folder beside their place and renamed into it. An entry
whose ``entry.json`` does not parse or differs from what was asked, whose object's sha256
differs, or that fails to load, is reported on stderr in one line, compiled again and
replaced.

Command line: ``python -m kernelplan.jitcache info | clear``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import inspect
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .cache import (
    CACHE_ENV,
    _cutlass_commit,
    _dist_version,
    _dsl_env,
    _plain,
    _rel,
    _warn_once,
    cache_root,
    file_digest,
    import_closure,
)

__all__ = [
    "SCHEMA",
    "jit_cache_root",
    "jit_components",
    "implementation_digests",
    "cute_kernel_key",
    "device_arch",
    "entry_dir",
    "load_or_compile",
    "entries",
    "clear",
]

#: Bump when the entry layout or the key's meaning changes.
SCHEMA = 1
OBJECT = "module.o"
HEADER = "module.h"
ENTRY = "entry.json"

_lock = threading.RLock()
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


# --------------------------------------------------------------------------- where


def jit_cache_root(directory: str | os.PathLike | None = None) -> Path | None:
    """Where entries go: ``directory``, else ``$KERNELPLAN_CACHE/jit``, else
    ``<checkout>/.cache/jit``; None when ``KERNELPLAN_CACHE`` says off (that wins over
    ``directory``)."""
    base = cache_root()  # None when off; $KERNELPLAN_CACHE or <checkout>/.cache/kernelplan
    if base is None:
        return None
    if directory is not None:
        return Path(directory).expanduser()
    if os.environ.get(CACHE_ENV):
        return base / "jit"
    from .cutlass_src import repo_root

    return repo_root() / ".cache" / "jit"


# --------------------------------------------------------------------------- key


def _source_file(fn: Any) -> Path | None:
    target = fn
    if inspect.ismethod(target):
        target = target.__func__
    if not (inspect.isfunction(target) or inspect.isclass(target)):
        target = type(target)  # a kernel object with a @cute.jit __call__
    mod = sys.modules.get(getattr(target, "__module__", "") or "")
    f = getattr(mod, "__file__", None)
    return Path(f).resolve() if f and f.endswith(".py") else None


def _qualname(fn: Any) -> str:
    target = fn.__func__ if inspect.ismethod(fn) else fn
    if not (inspect.isfunction(target) or inspect.isclass(target)):
        target = type(target)
    return f"{getattr(target, '__module__', '?')}:{getattr(target, '__qualname__', '?')}"


def implementation_digests(fn: Any) -> dict[str, str]:
    """File -> sha256 for the module that defines ``fn`` (a function, a bound method, or a
    kernel object's class) and the files it imports: from the CUTLASS examples tree for an
    example (as :func:`kernelplan.cache.example_digests` follows them), else from its own
    folder. An edited kernel source therefore misses. Empty when the source is unknown."""
    path = _source_file(fn)
    if path is None:
        return {}
    ex: Path | None
    try:
        from .cutlass_src import examples_dir

        ex = examples_dir().resolve()
    except Exception:
        ex = None
    if ex is not None and path.is_relative_to(ex):
        files, base = import_closure(path, [path.parent, ex / "cute", ex], [ex]), ex
    else:
        from .cutlass_src import repo_root

        files, base = import_closure(path, [path.parent], [path.parent]), repo_root().resolve()
    return {_rel(p, base): file_digest(p) for p in files}


def _arg_kind(a: Any) -> Any:
    """What of a compile argument may change the code and is safe to key: plain Python
    values (compile-time constants) by value, everything else by type (a tensor's data
    pointer must not enter the key; its layout belongs to the caller's ``key``)."""
    if a is None or isinstance(a, (bool, int, float, str)):
        return _plain(a)
    if isinstance(a, (tuple, list)):
        return [_arg_kind(x) for x in a]
    t = type(a)
    return f"{t.__module__}.{t.__qualname__}"


def _dsl_runtime() -> str | None:
    """The DSL runtime library in use (its cu12/cu13 folder and name), or None."""
    try:
        from cutlass.base_dsl.env_manager import get_prefix_dsl_libs

        libs = get_prefix_dsl_libs("CUTE_DSL") or ""
    except Exception:
        return None
    parts = [Path(p) for p in libs.split(os.pathsep) if p]
    return ",".join(f"{p.parent.parent.name}/{p.name}" for p in parts) or None


def jit_components(
    fn: Any, compile_args: tuple, *, key: str, options: str | None, arch: str
) -> tuple[str, dict[str, Any]]:
    """(sha256, components) of the entry for ``fn`` compiled with ``compile_args``."""
    comps: dict[str, Any] = {
        "schema": SCHEMA,
        "key": str(key),
        "options": options or "",
        "arch": arch,
        "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
        "nvidia_cutlass_dsl": _dist_version("nvidia-cutlass-dsl"),
        "cutlass_commit": _cutlass_commit(),
        "cute_dsl_env": _dsl_env(),
        "dsl_runtime": _dsl_runtime(),
        "host": f"{sys.platform}-{platform.machine()}",
        "function": _qualname(fn),
        "implementation": implementation_digests(fn),
        "arg_kinds": [_arg_kind(a) for a in compile_args],
    }
    comps = json.loads(json.dumps(comps, sort_keys=True, default=str))
    text = json.dumps(comps, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest(), comps


def entry_dir(root: Path, digest: str, components: dict[str, Any]) -> Path:
    ver = components.get("nvidia_cutlass_dsl") or "unknown"
    commit = str(components.get("cutlass_commit") or "unknown").replace("pinned:", "")
    arch = re.sub(r"[^\w.-]", "_", str(components.get("arch") or "unknown"))
    return root / f"{ver}-{commit[:12]}" / arch / digest


def cute_kernel_key(kernel: Any) -> str:
    """The ``key`` string for a :class:`kernelplan.kernel.CuteKernel`: its compile key (as
    :meth:`kernelplan.KernelPlan.kernel` derives it: implementation, config, fixed problem
    fields, target SM, tensor signatures, Const values, options), plus what that key may
    lack when a kernel was built by hand: its name, options, TVM-FFI flag, every tensor
    spec's :meth:`~kernelplan.kernel.TensorSpec.signature` (dynamic extents are not in it)
    and ``meta`` (values baked into the code, such as ``max_active_clusters``)."""
    specs = {
        n: _plain(s.signature()) if hasattr(s, "signature") else repr(s)
        for n, s in sorted(kernel.specs.items())
    }
    obj = {
        "name": kernel.name,
        "key": _plain(kernel.key),
        "options": kernel.options or "",
        "tvm_ffi": bool(getattr(kernel, "tvm_ffi", False)),
        "meta": _plain(getattr(kernel, "meta", None) or {}),
        "specs": specs,
    }
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def device_arch() -> str:
    """The arch to key a compile for the current device with: ``$CUTE_DSL_ARCH`` when set
    (the DSL then compiles for it), else ``sm_<major><minor>`` of the current torch device
    (the DSL adds the ``a`` suffix itself), else ``"unknown"``."""
    env = os.environ.get("CUTE_DSL_ARCH")
    if env:
        return env
    try:
        import torch

        major, minor = torch.cuda.get_device_capability()
        return f"sm_{major}{minor}"
    except Exception:
        return "unknown"


# --------------------------------------------------------------------------- store


def _short(e: BaseException) -> str:
    """One line of an exception (the DSL's messages are multi-line and coloured)."""
    text = " ".join(_ANSI.sub("", str(e)).split())
    if "error:" in text:  # the DSL's banner: the innermost "error: ..." says what went wrong
        text = text.rsplit("error:", 1)[1]
        text = re.split(r"\b(?:suggestion|note):", text, maxsplit=1)[0].strip()
    return f"{type(e).__name__}: {text[:240]}" if text else type(e).__name__


def _abi(compiled: Any) -> str:
    names = {c.__name__ for c in type(compiled).__mro__}
    return "tvm-ffi" if "TVMFFIJitCompiledFunctionBase" in names else "cute"


def _load(d: Path, digest: str, components: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The function stored in ``d``; raises ValueError/OSError/DSL errors when unusable."""
    meta = json.loads((d / ENTRY).read_text(encoding="utf-8"))
    if not isinstance(meta, dict) or meta.get("key") != digest:
        raise ValueError("key mismatch")
    if meta.get("schema") != SCHEMA:
        raise ValueError(f"schema {meta.get('schema')} != {SCHEMA}")
    if meta.get("components") != components:
        raise ValueError("components differ from the key's")
    data = (d / OBJECT).read_bytes()
    if len(data) != meta.get("object_bytes") or hashlib.sha256(data).hexdigest() != meta.get(
        "object_sha256"
    ):
        raise ValueError(f"{OBJECT} is not the object that was stored (size or sha256)")
    from cutlass.cute.runtime import load_module

    abi, prefix = meta.get("abi"), meta.get("prefix")
    if abi not in ("cute", "tvm-ffi") or not isinstance(prefix, str):
        raise ValueError("no abi or prefix")
    module = load_module(str(d / OBJECT), enable_tvm_ffi=abi == "tvm-ffi")
    return module[prefix], meta


def _store(
    compiled: Any, root: Path, final: Path, digest: str, components: dict[str, Any], extra: dict
) -> None:
    """Export ``compiled`` into a temporary folder and rename it to ``final``."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{digest[:12]}-", dir=final.parent))
    try:
        tmp.chmod(0o755)
        prefix = "kp_" + digest[:24]
        abi = _abi(compiled)
        if abi == "tvm-ffi":
            compiled.export_to_c(str(tmp / OBJECT), function_name=prefix)
        else:
            compiled.export_to_c(str(tmp), Path(OBJECT).stem, function_prefix=prefix)
        data = (tmp / OBJECT).read_bytes()
        meta = {
            "schema": SCHEMA,
            "key": digest,
            "prefix": prefix,
            "abi": abi,
            "object_bytes": len(data),
            "object_sha256": hashlib.sha256(data).hexdigest(),
            "function_name": getattr(compiled, "function_name", None),
            "kernels": sorted(getattr(compiled, "kernel_info", None) or {}),
            "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            **extra,
            "components": components,
        }
        (tmp / ENTRY).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        if final.exists():  # a corrupt entry being replaced, or a concurrent writer
            shutil.rmtree(final, ignore_errors=True)
        try:
            os.replace(tmp, final)
        except OSError:
            if not (final / ENTRY).is_file():  # not a concurrent writer's entry: a real error
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _compile(fn: Any, compile_args: tuple, options: str | None) -> Any:
    import cutlass.cute as cute

    kw = {"options": options} if options else {}
    return cute.compile(fn, *compile_args, **kw)


def load_or_compile(
    fn: Any,
    compile_args: tuple,
    *,
    key: str,
    options: str | None = None,
    arch: str,
    directory: str | os.PathLike | None = None,
    compile: Callable[[Any, tuple, str | None], Any] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """The compiled function for ``fn(*compile_args)``: loaded from the cache when an entry
    for it exists, else compiled with ``cute.compile(fn, *compile_args, options=options)``
    and stored.

    Args:
        fn: what ``cute.compile`` takes first (a ``@cute.jit`` function or kernel object).
        compile_args: what it takes after (real or fake tensors, stream, constants).
        key: a stable string for what the code depends on besides the DSL/CUTLASS versions
            (implementation, config, tensor signature and dynamic marks, SM).
        options: the ``cute.compile`` options string, if any (part of the key).
        arch: the SM the code is compiled for (``"sm_90a"``); part of the key only: the DSL
            compiles for the GPU it sees, or for ``CUTE_DSL_ARCH``.
        directory: the cache root (default: see :func:`jit_cache_root`).
        compile: replaces ``cute.compile`` (``compile(fn, args, options)``), for tests.

    Returns:
        (compiled function, info) where info is ``{"cache": "hit" | "miss" | "off",
        "seconds": wall time of this call, "path": the entry folder or None, ...}``; a miss
        adds ``compile_seconds``, ``export_seconds``, ``stored`` (False when the export
        failed; the function is still returned) and ``reason`` ("absent", "corrupt: ...",
        "export failed: ..."); a hit adds ``load_seconds`` and ``compile_seconds`` (of the
        process that stored it).
    """
    t0 = time.perf_counter()
    do_compile = compile or _compile
    root = jit_cache_root(directory)
    if root is None:
        compiled = do_compile(fn, compile_args, options)
        dt = time.perf_counter() - t0
        return compiled, {"cache": "off", "seconds": dt, "path": None, "compile_seconds": dt}

    digest, comps = jit_components(fn, compile_args, key=key, options=options, arch=arch)
    final = entry_dir(root, digest, comps)
    with _lock:
        reason = "absent"
        if (final / ENTRY).is_file() or (final / OBJECT).exists():
            t1 = time.perf_counter()
            try:
                compiled, meta = _load(final, digest, comps)
            except Exception as e:  # anything unusable: recompile and replace
                reason = f"corrupt: {_short(e)}"
                _warn_once(f"ignoring corrupt JIT-cache entry {final} ({_short(e)}): recompiling")
            else:
                now = time.perf_counter()
                return compiled, {
                    "cache": "hit",
                    "seconds": now - t0,
                    "path": str(final),
                    "load_seconds": now - t1,
                    "compile_seconds": meta.get("compile_seconds"),
                    "abi": meta.get("abi"),
                }
        t1 = time.perf_counter()
        compiled = do_compile(fn, compile_args, options)
        t2 = time.perf_counter()
        info: dict[str, Any] = {
            "cache": "miss",
            "path": str(final),
            "reason": reason,
            "compile_seconds": t2 - t1,
            "abi": _abi(compiled),
        }
        try:
            _store(compiled, root, final, digest, comps, {"compile_seconds": round(t2 - t1, 3)})
            info["stored"] = True
        except Exception as e:  # not fatal: the compiled function is good
            info["stored"] = False
            info["reason"] = f"export failed: {_short(e)}"
            _warn_once(f"JIT cache: {_qualname(fn)} not stored ({_short(e)})")
        t3 = time.perf_counter()
        info["export_seconds"] = t3 - t2
        info["seconds"] = t3 - t0
        return compiled, info


# --------------------------------------------------------------------------- housekeeping


def entries(directory: str | os.PathLike | None = None) -> list[Path]:
    root = jit_cache_root(directory)
    if root is None or not root.is_dir():
        return []
    return sorted(p.parent for p in root.glob(f"*/*/*/{ENTRY}"))


def clear(directory: str | os.PathLike | None = None) -> int:
    """Remove every entry; returns how many there were."""
    root = jit_cache_root(directory)
    found = entries(directory)
    if root is not None and root.is_dir():
        shutil.rmtree(root)
    return len(found)


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(
        prog="python -m kernelplan.jitcache", description="the compiled-function (JIT) cache"
    )
    p.add_argument("cmd", choices=("info", "clear"))
    a = p.parse_args(argv)
    root = jit_cache_root()
    if a.cmd == "info":
        print(f"jit cache: {root or 'off'} ({len(entries())} entries)")
    else:
        print(f"removed {clear()} entries from {root or 'nothing (cache off)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
