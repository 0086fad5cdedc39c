"""Static analysis of CuTe DSL kernels: compile for any SM without a GPU, read the cubin.

Three steps, each usable alone:

1. :func:`compile_to_cubin` compiles a ``@cute.jit`` function (or a kernel object's
   ``__call__``) with ``cute.compile`` for a chosen target (``sm_80``, ``sm_90a``,
   ``sm_100a``, ...) into a fresh per-call folder, and returns the cubin and PTX paths,
   the compiled object, the compile time, the ptxas resource log, and the dynamic shared
   memory each launch requests (:class:`CompiledArtifacts`).
2. :func:`analyze_cubin` reads one cubin with ``cuobjdump`` (``-res-usage`` and
   ``-sass``, or ``nvdisasm``): per kernel function, registers per thread, stack/local
   bytes, static shared memory, local-memory (spill) traffic, cubin size and the SASS
   instruction histogram grouped by :data:`kernelplan.sass.SASS_CATEGORIES`.
3. :func:`static_reports` merges both into one :class:`StaticReport` per kernel function;
   :func:`format_table` renders reports as a markdown table.

What the DSL (nvidia-cutlass-dsl 4.8.1) does with its environment variables
---------------------------------------------------------------------------
``CUTE_DSL_ARCH``, ``CUTE_DSL_KEEP`` and ``CUTE_DSL_DUMP_DIR`` are read ONCE, when
``import cutlass`` builds the DSL singleton (``CuTeDSL._get_dsl()``): its
``EnvironmentVarManager`` (``cutlass.base_dsl.env_manager``) copies every setting into
attributes at construction, and the reader ``get_str_env_var`` is itself
``functools.lru_cache``-d. Setting ``os.environ`` after the import changes nothing (seen:
no file written, arch still detected). At compile time the DSL reads the manager's
attributes: ``_arch`` (behind the ``arch`` property, which probes the driver when unset),
``dump_dir``, ``keep_tokens`` and the flags derived from them at construction
(``keep_ptx``, ``keep_cubin``, ``keep_ir_clean``, ``keep_ir``, ``keep_sass``).
:func:`compile_to_cubin` therefore sets, for the duration of the call, both the process
environment (for subprocesses and the few places that read ``os.environ`` directly) and
those attributes on every live DSL singleton, and restores both afterwards. Any
``keep_*`` flag forces the DSL to bypass its compile cache, so the files are always
written; they are named ``<host function symbol>.<arch>.cubin`` / ``.ptx``.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import importlib.util
import io
import json
import mmap
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernelplan.errors import KernelPlanError
from kernelplan.sass import OTHER, SASS_CATEGORIES, parse_sass

__all__ = [
    "TOOL_PACKAGES",
    "StaticAnalysisError",
    "ToolMissingError",
    "UnknownArchError",
    "CompiledArtifacts",
    "StaticReport",
    "find_tool",
    "tool_versions",
    "ptxas_version",
    "compile_to_cubin",
    "target_arch",
    "analyze_cubin",
    "parse_res_usage",
    "parse_ptxas_log",
    "dynamic_smem_from_llvm_ir",
    "static_reports",
    "compile_and_analyze",
    "main_report",
    "format_table",
]

#: Tool name -> pip package that ships it.
TOOL_PACKAGES: dict[str, str] = {
    "cuobjdump": "nvidia-cuda-cuobjdump",
    "nvdisasm": "nvidia-cuda-nvdisasm",
}


class StaticAnalysisError(KernelPlanError):
    """Static analysis could not be done (compile output missing, tool failed)."""


class ToolMissingError(StaticAnalysisError):
    """A CUDA binary tool (cuobjdump, nvdisasm) is not installed."""


class UnknownArchError(StaticAnalysisError, ValueError):
    """The target architecture string is not one the CuTe DSL knows."""


# --------------------------------------------------------------------------- tools


def _wheel_tool_dirs() -> list[Path]:
    """``bin`` folders of the ``nvidia`` namespace package's wheels (cu13/bin, ...)."""
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return []
    dirs: list[Path] = []
    for root in spec.submodule_search_locations:
        root_path = Path(root)
        # nvidia-cuda-* 13.x: nvidia/cu13/bin; 12.x: nvidia/cuda_cuobjdump/bin.
        dirs.extend(sorted(p for p in root_path.glob("*/bin") if p.is_dir()))
    return dirs


def find_tool(name: str) -> Path:
    """Path of the executable ``name`` (``"cuobjdump"`` or ``"nvdisasm"``).

    Looks first in the ``bin`` folders of the NVIDIA pip wheels (the ``nvidia``
    namespace package, e.g. ``site-packages/nvidia/cu13/bin``), then on ``PATH``.

    Raises:
        ToolMissingError: not found; the message names the pip package to install.
    """
    for folder in _wheel_tool_dirs():
        candidate = folder / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(name)
    if found:
        return Path(found)
    package = TOOL_PACKAGES.get(name, f"the package that provides {name}")
    raise ToolMissingError(
        f"{name} not found in the nvidia pip wheels or on PATH: "
        f"run `pip install {package}` (or `uv add {package}`)"
    )


def _dsl_error(e: ImportError) -> KernelPlanError:
    """A failed DSL import as one line: what to install (or which version the project pins)."""
    from kernelplan.cutlass_src import DSL_REQUIREMENT
    from kernelplan.errors import explain

    return explain(e, "importing the CuTe DSL") or StaticAnalysisError(
        f"importing the CuTe DSL failed ({type(e).__name__}: {e}): reinstall {DSL_REQUIREMENT}"
    )


@contextlib.contextmanager
def _dsl_import() -> Iterator[None]:
    """Around an ``import cutlass...``: a missing or different DSL is one line, not a
    traceback (:func:`kernelplan.errors.explain`)."""
    try:
        yield
    except ImportError as e:
        if (getattr(e, "name", None) or "cutlass").split(".")[0] != "cutlass":
            raise
        raise _dsl_error(e) from e


def _dist_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


_RE_TOOLS_RELEASE = re.compile(rb"Cuda compilation tools, release (\d+\.\d+), V(\d+(?:\.\d+)+)")
_RE_TOOLS_BUILD = re.compile(rb"Build (cuda_[\w.]+/compiler\.[\w.]+)")


def _dsl_compiler_library() -> Path | None:
    """The DSL library ``cute.compile`` runs ptxas from: nvidia-cutlass-dsl 4.8.1 links the
    PTX compiler into ``cutlass/_mlir/_mlir_libs/_cutlass_ir.cu<N>.*.so`` (one per CUDA
    toolkit flavour; the DSL loads the newest the driver supports, or the newest where there
    is no driver). The loaded one when the DSL is imported, else the newest installed."""
    loaded = sys.modules.get("cutlass._mlir._mlir_libs._cutlass_ir")
    f = getattr(loaded, "__file__", None)
    if f and Path(f).is_file():
        return Path(f)
    try:
        spec = importlib.util.find_spec("cutlass")
    except (ImportError, ValueError):
        return None
    found: list[tuple[int, Path]] = []
    for loc in (spec.submodule_search_locations or ()) if spec else ():
        for so in Path(loc, "_mlir", "_mlir_libs").glob("_cutlass_ir.cu*.*"):
            m = re.match(r"_cutlass_ir\.cu(\d+)\.", so.name)
            if m and so.suffix in (".so", ".pyd"):
                found.append((int(m.group(1)), so))
    return max(found)[1] if found else None


@functools.lru_cache(maxsize=8)
def _release_in(path: str, size: int, mtime_ns: int) -> dict[str, str]:
    """The ``Cuda compilation tools, release X, VX.Y.Z`` and ``Build ...`` strings that a
    CUDA tool (or a library linking one) carries, read from the file's bytes (no run)."""
    out: dict[str, str] = {}
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        rel = _RE_TOOLS_RELEASE.search(m)
        if rel:
            out["version"] = rel.group(2).decode()
            build = _RE_TOOLS_BUILD.search(m, rel.end(), rel.end() + 256)
            if build:
                out["build"] = build.group(1).decode()
    return out


def ptxas_version() -> dict[str, str]:
    """The ptxas that compiles the DSL's PTX to SASS: the PTX compiler inside the DSL wheel
    (``{"version": "13.4.59", "build": "cuda_13.4.r13.4/compiler...", "library":
    "_cutlass_ir.cu13...so"}``), read from the library's bytes; ``{}`` when not found."""
    lib = _dsl_compiler_library()
    if lib is None:
        return {}
    st = lib.stat()
    return {**_release_in(str(lib), st.st_size, st.st_mtime_ns), "library": lib.name}


def _tool_version(name: str) -> dict[str, str]:
    """``{"version", "build", "package"}`` of a CUDA binary tool, from ``<tool> --version``."""
    try:
        tool = find_tool(name)
    except ToolMissingError:
        return {}
    out: dict[str, str] = {}
    try:
        proc = subprocess.run(
            [str(tool), "--version"], capture_output=True, text=True, timeout=30, check=False
        )
        text = proc.stdout.encode()
        rel = _RE_TOOLS_RELEASE.search(text)
        if rel:
            out["version"] = rel.group(2).decode()
        build = _RE_TOOLS_BUILD.search(text)
        if build:
            out["build"] = build.group(1).decode()
    except (OSError, subprocess.SubprocessError):
        pass
    pkg = TOOL_PACKAGES.get(name)
    ver = _dist_version(pkg) if pkg else None
    if ver:
        out["package"] = f"{pkg} {ver}"
    return out


def tool_versions(sass_tool: str = "cuobjdump") -> dict[str, Any]:
    """The versions that produced a static result: the CuTe DSL (``nvidia_cutlass_dsl``), the
    ptxas inside it (:func:`ptxas_version`) and the tool that read the cubin (``cuobjdump``,
    or ``nvdisasm`` as well when it disassembled). Each tool is a dict (``version``, ``build``
    and where it came from); a DSL release can change the SASS with no change of ours, so
    every static record names them."""
    out: dict[str, Any] = {
        "nvidia_cutlass_dsl": _dist_version("nvidia-cutlass-dsl"),
        "ptxas": ptxas_version(),
        "cuobjdump": _tool_version("cuobjdump"),
    }
    if sass_tool != "cuobjdump":
        out[sass_tool] = _tool_version(sass_tool)
    return out


def _run_tool(name: str, *args: str | os.PathLike) -> str:
    tool = find_tool(name)
    proc = subprocess.run([str(tool), *map(str, args)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise StaticAnalysisError(
            f"{name} {' '.join(map(str, args))} failed (exit {proc.returncode}): "
            f"{detail[-1] if detail else 'no output'}"
        )
    return proc.stdout


# --------------------------------------------------------------------------- compile


def _normalize_arch(arch: str) -> str:
    with _dsl_import():
        from cutlass.base_dsl import Arch

    try:
        return Arch.from_string(arch).to_string()
    except (KeyError, ValueError) as exc:
        known = ", ".join(a.to_string() for a in Arch)
        raise UnknownArchError(
            f"unknown target arch {arch!r}: use one the CuTe DSL knows ({known})"
        ) from exc


def _dsl_instances() -> list[Any]:
    with _dsl_import():
        from cutlass.base_dsl.dsl import DSLSingletonMeta
        from cutlass.cutlass_dsl import CuTeDSL

    CuTeDSL._get_dsl()  # make sure the CuTe DSL singleton exists
    return list(DSLSingletonMeta._instances.values())


@contextlib.contextmanager
def _dsl_overrides(env: dict[str, str], attrs: dict[str, Any]) -> Iterator[None]:
    """``env`` in the process environment and ``attrs`` on every live DSL singleton's
    settings (``dsl.envar``) for the block, then both restored."""
    saved_env = {k: os.environ.get(k) for k in env}
    saved_attrs: list[tuple[Any, dict[str, Any]]] = []
    try:
        os.environ.update(env)
        for dsl in _dsl_instances():
            envar = dsl.envar
            missing = [a for a in attrs if a not in vars(envar)]
            if missing:
                raise StaticAnalysisError(
                    f"this nvidia-cutlass-dsl has no DSL settings {missing}: "
                    "kernelplan.static was written for 4.8.1; pin nvidia-cutlass-dsl==4.8.1"
                )
            saved_attrs.append((envar, {a: vars(envar)[a] for a in attrs}))
            for a, v in attrs.items():
                setattr(envar, a, v)
        yield
    finally:
        for envar, values in saved_attrs:
            for a, v in values.items():
                setattr(envar, a, v)
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def target_arch(arch: str) -> Iterator[None]:
    """The DSL's arch is ``arch`` for the block (``get_arch_enum()``, ``envar.arch``,
    ``$CUTE_DSL_ARCH``), then restored. For what runs before ``cute.compile`` and reads the
    arch: an upstream kernel class may in its constructor (``fmha.py`` L286), and unset the
    DSL answers the GPU's arch (no GPU: sm_100a), not the one compiled for.

    Raises:
        UnknownArchError: ``arch`` is not a target the DSL knows.
    """
    arch = _normalize_arch(arch)
    with _dsl_overrides({"CUTE_DSL_ARCH": arch}, {"_arch": arch}):
        yield


@contextlib.contextmanager
def _dsl_settings(arch: str, dump_dir: Path, keep: frozenset[str]) -> Iterator[None]:
    """Point the DSL at ``arch``/``dump_dir``/``keep`` for the block, then restore."""
    env = {
        "CUTE_DSL_ARCH": arch,
        "CUTE_DSL_KEEP": ",".join(sorted(keep)),
        "CUTE_DSL_DUMP_DIR": str(dump_dir),
    }
    attrs = {
        "_arch": arch,
        "dump_dir": str(dump_dir),
        "keep_tokens": keep,
        "keep_ptx": "ptx" in keep,
        "keep_cubin": "cubin" in keep,
        "keep_ir_clean": "ir" in keep,
        "keep_ir": "ir-debug" in keep,
        "keep_sass": "sass" in keep,
    }
    with _dsl_overrides(env, attrs):
        yield


@dataclass
class CompiledArtifacts:
    """What one :func:`compile_to_cubin` call produced.

    Attributes:
        compiled: the object ``cute.compile`` returned (callable on a GPU of ``arch``).
        arch: target, normalised by the DSL (``"sm_90a"``).
        function_name: symbol of the compiled host function; the cubin is named after it.
        dump_dir: the fresh folder this call wrote into (nothing else writes there).
        cubin_path: the main cubin: ``<function_name>.<arch>.cubin`` of this call.
        ptx_path: its PTX, or None.
        other_cubins: any other cubin written during the call (none in the usual case).
        kernels: kernel function symbols of this module, in the order the host function
            launches them (``compiled.kernel_info``); each is a function in the cubin.
        dynamic_smem_bytes: kernel symbol -> dynamic shared memory bytes its launch
            requests; None where the amount is computed at run time (or not found). For
            a kernel launched several times, the largest constant. See
            :func:`dynamic_smem_from_llvm_ir` for the method.
        compile_seconds: wall time of ``cute.compile`` (trace + MLIR passes + ptxas).
        ptxas: kernel symbol -> ptxas' own resource lines (registers, stack_frame_bytes,
            spill_store_bytes, spill_load_bytes, barriers, ...), or {} when not captured.
        compile_log: compiler text captured while compiling (ptxas remarks, warnings).
    """

    compiled: Any
    arch: str
    function_name: str
    dump_dir: Path
    cubin_path: Path
    ptx_path: Path | None
    other_cubins: tuple[Path, ...]
    kernels: tuple[str, ...]
    dynamic_smem_bytes: dict[str, int | None]
    compile_seconds: float
    ptxas: dict[str, dict[str, int]] = field(default_factory=dict)
    compile_log: str = ""


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def parse_ptxas_log(text: str) -> dict[str, dict[str, int]]:
    """Per-function numbers from ``ptxas -v`` text (as the DSL's ``remarks{ptx}`` prints).

    Returns function -> {"registers", "stack_frame_bytes", "spill_store_bytes",
    "spill_load_bytes", "barriers", "cmem0_bytes"} (keys present when printed; bytes per
    thread for stack and spills, as ptxas counts them: statically, per instruction).
    """
    result: dict[str, dict[str, int]] = {}
    current: str | None = None
    for line in _ANSI.sub("", text).splitlines():
        m = re.search(r"(?:Function properties for|Compiling entry function)\s+'?([\w$.]+)'?", line)
        if m:
            current = m.group(1)
            result.setdefault(current, {})
            continue
        if current is None:
            continue
        m = re.search(
            r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line
        )
        if m:
            entry = result[current]
            entry["stack_frame_bytes"] = int(m.group(1))
            entry["spill_store_bytes"] = int(m.group(2))
            entry["spill_load_bytes"] = int(m.group(3))
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m:
            entry = result[current]
            entry["registers"] = int(m.group(1))
            mb = re.search(r"used (\d+) barriers", line)
            if mb:
                entry["barriers"] = int(mb.group(1))
            mc = re.search(r"(\d+) bytes cmem\[0\]", line)
            if mc:
                entry["cmem0_bytes"] = int(mc.group(1))
    return {k: v for k, v in result.items() if v}


# The launch configuration in the host code, lowered to LLVM, is cudaLaunchConfig_t:
# {dim3 gridDim, dim3 blockDim, size_t dynamicSmemBytes, stream, attrs, numAttrs}.
_LAUNCH_CFG_T = "!llvm.struct<(array<3 x i32>, array<3 x i32>, i64, ptr, ptr, i32)>"
_RE_FUNC = re.compile(r"^\s*llvm\.func\s+@")
_RE_CONST = re.compile(r"^\s*(%[\w.]+) = llvm\.mlir\.constant\((-?\d+) : i64\) : i64")
_RE_GEP_SMEM = re.compile(
    r"^\s*(%[\w.]+) = llvm\.getelementptr (%[\w.]+)\[0, 2\] : .*" + re.escape(_LAUNCH_CFG_T)
)
_RE_STORE = re.compile(r"^\s*llvm\.store (%[\w.]+), (%[\w.]+) : i64, !llvm\.ptr")
_RE_ADDRESSOF = re.compile(r"llvm\.mlir\.addressof @([\w$.]+)")
_RE_LAUNCH_EX = re.compile(r"llvm\.call @_cudaLaunchKernelEx\(")
_RE_LAUNCH = re.compile(r"llvm\.call @_cudaLaunchKernel\((%[\w.]+(?:, %[\w.]+)*)\)")


def dynamic_smem_from_llvm_ir(ir_text: str, kernels: Iterable[str]) -> dict[str, int | None]:
    """Dynamic shared memory each kernel's launch requests, read from the lowered host IR.

    Method (nvidia-cutlass-dsl 4.8.1): the amount is not in the cubin. In the kept MLIR
    (``CUTE_DSL_KEEP=ir``) the launch carries ``dynamicSmemBytes = %x`` where ``%x`` is
    usually ``cute.kernel_smem_size`` (the DSL's own sum of the kernel's SMEM allocations,
    resolved later by a compiler pass) or the ``smem=`` given to ``.launch``. After
    compilation, ``str(compiled.ir_module)`` is the host code in the LLVM dialect, where
    each launch fills a ``cudaLaunchConfig_t`` and calls ``_cudaLaunchKernelEx``: the
    ``i64`` stored into field 2 of that struct is the dynamic SMEM, as a constant when it
    is known at compile time. The kernel is the ``llvm.mlir.addressof @<module>_<kernel>``
    last taken before the launch call. (The older ``_cudaLaunchKernel`` form passes the
    amount as its 9th argument and is read the same way.) A kernel whose amount is not a
    constant, or whose launch is not found, maps to None.
    """
    kernels = list(kernels)
    found: dict[str, list[int | None]] = {k: [] for k in kernels}
    consts: dict[str, int] = {}
    smem_slots: dict[str, str] = {}  # gep result -> "smem slot"
    last_smem: int | None = None
    last_kernel: str | None = None

    def kernel_of(symbol: str) -> str | None:
        for k in kernels:
            if symbol == k or symbol.endswith("_" + k):
                return k
        return None

    for line in ir_text.splitlines():
        if _RE_FUNC.match(line):
            consts, smem_slots, last_smem, last_kernel = {}, {}, None, None
            continue
        m = _RE_CONST.match(line)
        if m:
            consts[m.group(1)] = int(m.group(2))
            continue
        m = _RE_GEP_SMEM.match(line)
        if m:
            smem_slots[m.group(1)] = m.group(2)
            continue
        m = _RE_STORE.match(line)
        if m and m.group(2) in smem_slots:
            last_smem = consts.get(m.group(1))
            continue
        m = _RE_ADDRESSOF.search(line)
        if m and kernel_of(m.group(1)):
            last_kernel = kernel_of(m.group(1))
        if _RE_LAUNCH_EX.search(line) and last_kernel is not None:
            found[last_kernel].append(last_smem)
            last_smem = None
            continue
        m = _RE_LAUNCH.search(line)
        if m and last_kernel is not None:
            operands = [s.strip() for s in m.group(1).split(",")]
            found[last_kernel].append(consts.get(operands[8]) if len(operands) > 8 else None)
    result: dict[str, int | None] = {}
    for k, values in found.items():
        if not values or any(v is None for v in values):
            result[k] = None
        else:
            result[k] = max(v for v in values if v is not None)
    return result


def _append_option(options: str | None, extra: str) -> str:
    return f"{options} {extra}".strip() if options else extra


def compile_to_cubin(
    jit_callable: Any,
    args: Sequence[Any],
    *,
    arch: str,
    options: str | None = None,
    dump_dir: str | os.PathLike,
    kwargs: dict[str, Any] | None = None,
    keep_ir: bool = False,
    ptxas_info: bool = True,
) -> CompiledArtifacts:
    """Compile ``jit_callable(*args, **kwargs)`` with ``cute.compile`` for ``arch``; no GPU needed.

    Args:
        jit_callable: a ``@cute.jit`` function or an object whose ``__call__`` is one.
        args: compile arguments: fake tensors
            (``cutlass.cute.runtime.make_fake_compact_tensor``), ``cute`` pointers, Python
            scalars or Constexpr values, streams; as the callable expects.
        arch: target, e.g. ``"sm_80"``, ``"sm_90a"``, ``"sm_100a"`` (case as the DSL knows).
        options: the ``options=`` string of ``cute.compile`` (e.g. ``"--enable-tvm-ffi"``).
        dump_dir: parent folder; a fresh sub-folder ``compile-*`` is made per call, so the
            cubin of this call (the main kernel's) is never confused with one written by an
            earlier compile (e.g. an example's helper conversion kernels).
        kwargs: keyword compile arguments.
        keep_ir: also write the DSL's readable MLIR (``*_clean.mlir``) into the folder.
        ptxas_info: add ``remarks{ptx}`` to the options so ptxas prints its ``-v``
            resource lines (exact spill bytes); they are captured from stderr/stdout, not
            shown. This switches on the DSL's diagnostic collection; the SASS is the same
            (checked with tests/test_static.py).

    Compile seconds are the wall time of ``cute.compile`` alone. Dynamic shared memory:
    see :func:`dynamic_smem_from_llvm_ir`. Environment: see the module docstring (the DSL
    reads ``CUTE_DSL_*`` at import, so this sets both the environment and the live DSL
    settings for the duration of the call, then restores them).

    Raises:
        UnknownArchError: ``arch`` is not a target the DSL knows.
        StaticAnalysisError: the compile wrote no cubin.
        Exception: whatever ``cute.compile`` raises (tracing/compiler errors), after the
            captured compiler text has been written to stderr.
    """
    with _dsl_import():
        import cutlass.cute as cute

    arch = _normalize_arch(arch)
    root = Path(dump_dir)
    root.mkdir(parents=True, exist_ok=True)
    out = Path(tempfile.mkdtemp(prefix=f"compile-{arch}-", dir=root))
    keep = frozenset({"ptx", "cubin"} | ({"ir"} if keep_ir else set()))
    opts = _append_option(options, "remarks{ptx}") if ptxas_info else options
    compile_kwargs = dict(kwargs or {})
    if opts:
        compile_kwargs["options"] = opts

    captured = io.StringIO()
    with _dsl_settings(arch, out, keep):
        start = time.perf_counter()
        try:
            if ptxas_info:
                with contextlib.redirect_stderr(captured), contextlib.redirect_stdout(captured):
                    compiled = cute.compile(jit_callable, *args, **compile_kwargs)
            else:
                compiled = cute.compile(jit_callable, *args, **compile_kwargs)
        except BaseException:
            sys.stderr.write(captured.getvalue())
            raise
        seconds = time.perf_counter() - start

    function_name = str(getattr(compiled, "function_name", "") or "")
    cubins = sorted(out.glob("*.cubin"), key=lambda p: p.stat().st_mtime)
    if not cubins:
        raise StaticAnalysisError(
            f"cute.compile for {arch} wrote no cubin into {out}: check that the callable "
            "launches a @cute.kernel and that CUTE_DSL_KEEP handling matches this DSL version"
        )
    expected = out / f"{function_name}.{arch}.cubin"
    main = expected if expected.exists() else cubins[-1]
    ptx = main.with_suffix(".ptx")

    kernels = tuple(getattr(compiled, "kernel_info", None) or ())
    try:
        ir_text = str(compiled.ir_module)
    except Exception:  # no host module (e.g. an export-only compile)
        ir_text = ""
    smem = dynamic_smem_from_llvm_ir(ir_text, kernels) if kernels else {}
    log = captured.getvalue()
    return CompiledArtifacts(
        compiled=compiled,
        arch=arch,
        function_name=function_name,
        dump_dir=out,
        cubin_path=main,
        ptx_path=ptx if ptx.exists() else None,
        other_cubins=tuple(p for p in cubins if p != main),
        kernels=kernels,
        dynamic_smem_bytes=smem,
        compile_seconds=seconds,
        ptxas=parse_ptxas_log(log),
        compile_log=log,
    )


# --------------------------------------------------------------------------- analysis


def parse_res_usage(text: str) -> dict[str, dict[str, int]]:
    """Parse ``cuobjdump -res-usage`` text: function -> {"REG": n, "STACK": n, "SHARED": n,
    "LOCAL": n, "CONSTANT[0]": n, ...} (every ``KEY:value`` pair printed for it).

    Raises ``ValueError`` when no function is found.
    """
    result: dict[str, dict[str, int]] = {}
    current: str | None = None
    for line in text.splitlines():
        m = re.match(r"^\s*Function\s+([^\s:]+)\s*:\s*$", line)
        if m:
            current = m.group(1)
            result[current] = {}
            continue
        if current is not None and re.match(r"^\s*REG:", line):
            for key, value in re.findall(r"([A-Z_]+(?:\[\d+\])?):(\d+)", line):
                result[current][key] = int(value)
            current = None
    if not result:
        raise ValueError("no 'Function <name>:' entry found in cuobjdump -res-usage text")
    return result


def analyze_cubin(path: str | os.PathLike, *, sass_tool: str = "cuobjdump") -> dict[str, dict]:
    """Resources and SASS instruction mix of every kernel function in a cubin.

    Runs ``cuobjdump -res-usage`` and ``cuobjdump -sass`` (or ``nvdisasm -c`` with
    ``sass_tool="nvdisasm"``). Returns function name -> dict with:

    - ``registers``: registers per thread (``REG``).
    - ``stack_bytes``: per-thread stack frame bytes (``STACK``).
    - ``local_bytes``: per-thread local memory bytes outside the stack (``LOCAL``).
    - ``static_smem_bytes``: statically declared shared memory per CTA (``SHARED``);
      dynamic shared memory is a launch parameter, not in the cubin.
    - ``cmem0_bytes``: constant bank 0 (kernel parameters) bytes.
    - ``spill_store_bytes`` / ``spill_load_bytes``: bytes per thread of the ``STL`` /
      ``LDL`` instructions in the SASS (the static count ptxas reports as spill
      stores/loads, plus any local-array accesses); ``spill_source`` = ``"sass"``.
    - ``cubin_bytes``: size of the cubin file (the whole file, shared by its functions).
    - ``instructions``: SASS instructions, alignment padding excluded.
    - ``opcodes``: opcode -> count; ``categories``: category -> count (see
      :data:`kernelplan.sass.SASS_CATEGORIES`; they sum to ``instructions``);
      ``mma_mnemonics``: full tensor-core mnemonics (shape/types) -> count.
    - ``arch``: the SM the code is for, as the disassembler reports it.

    Raises:
        ToolMissingError: cuobjdump (or nvdisasm) is not installed.
        StaticAnalysisError: the file is missing or the tool fails on it.
    """
    cubin = Path(path)
    if not cubin.is_file():
        raise StaticAnalysisError(f"cubin not found: {cubin}")
    usage = parse_res_usage(_run_tool("cuobjdump", "-res-usage", cubin))
    if sass_tool == "cuobjdump":
        sass_text = _run_tool("cuobjdump", "-sass", cubin)
    elif sass_tool == "nvdisasm":
        sass_text = _run_tool("nvdisasm", "-c", cubin)
    else:
        raise ValueError(f"sass_tool must be 'cuobjdump' or 'nvdisasm', not {sass_tool!r}")
    functions = parse_sass(sass_text)
    size = cubin.stat().st_size
    result: dict[str, dict] = {}
    for name in sorted(set(usage) | set(functions)):
        res = usage.get(name, {})
        fn = functions.get(name)
        result[name] = {
            "registers": res.get("REG"),
            "stack_bytes": res.get("STACK"),
            "local_bytes": res.get("LOCAL"),
            "static_smem_bytes": res.get("SHARED"),
            "cmem0_bytes": res.get("CONSTANT[0]"),
            "spill_store_bytes": fn.local_store_bytes if fn else None,
            "spill_load_bytes": fn.local_load_bytes if fn else None,
            "spill_source": "sass",
            "cubin_bytes": size,
            "instructions": fn.instructions if fn else 0,
            "opcodes": dict(fn.opcodes.most_common()) if fn else {},
            "categories": fn.categories if fn else dict.fromkeys([*SASS_CATEGORIES, OTHER], 0),
            "mma_mnemonics": dict(fn.mnemonics.most_common()) if fn else {},
            "arch": fn.arch if fn else None,
        }
    return result


# --------------------------------------------------------------------------- reports


@dataclass
class StaticReport:
    """Static facts of one kernel function compiled for one arch (per thread unless said).

    ``dynamic_smem_bytes`` is per CTA and None when unknown at compile time;
    ``spill_source`` is ``"ptxas"`` when the spill bytes are ptxas' own ``-v`` numbers,
    ``"sass"`` when they are the STL/LDL bytes counted in the SASS.
    """

    kernel: str
    arch: str
    registers: int | None
    spill_store_bytes: int | None
    spill_load_bytes: int | None
    spill_source: str
    stack_bytes: int | None
    local_bytes: int | None
    static_smem_bytes: int | None
    dynamic_smem_bytes: int | None
    cubin_bytes: int
    instructions: int
    categories: dict[str, int]
    opcodes: dict[str, int]
    mma_mnemonics: dict[str, int] = field(default_factory=dict)
    barriers: int | None = None
    compile_seconds: float | None = None
    cubin_path: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (``json.dumps`` works on it as is)."""
        d = asdict(self)
        json.dumps(d)  # fail here, not in a caller, if a field is not JSON-ready
        return d


def static_reports(
    artifacts: CompiledArtifacts, *, sass_tool: str = "cuobjdump"
) -> list[StaticReport]:
    """One :class:`StaticReport` per kernel function of the main cubin of ``artifacts``.

    Kernels are listed in launch order (``artifacts.kernels``), then any other function
    of the cubin. Spill bytes come from the captured ptxas log when available.
    """
    analysis = analyze_cubin(artifacts.cubin_path, sass_tool=sass_tool)
    order = [k for k in artifacts.kernels if k in analysis]
    order += [k for k in analysis if k not in order]
    reports = []
    for name in order:
        a = analysis[name]
        ptxas = artifacts.ptxas.get(name, {})
        has_ptxas = "spill_store_bytes" in ptxas
        reports.append(
            StaticReport(
                kernel=name,
                arch=artifacts.arch,
                registers=a["registers"],
                spill_store_bytes=ptxas["spill_store_bytes"]
                if has_ptxas
                else a["spill_store_bytes"],
                spill_load_bytes=ptxas["spill_load_bytes"] if has_ptxas else a["spill_load_bytes"],
                spill_source="ptxas" if has_ptxas else "sass",
                stack_bytes=a["stack_bytes"],
                local_bytes=a["local_bytes"],
                static_smem_bytes=a["static_smem_bytes"],
                dynamic_smem_bytes=artifacts.dynamic_smem_bytes.get(name),
                cubin_bytes=a["cubin_bytes"],
                instructions=a["instructions"],
                categories=a["categories"],
                opcodes=a["opcodes"],
                mma_mnemonics=a["mma_mnemonics"],
                barriers=ptxas.get("barriers"),
                compile_seconds=round(artifacts.compile_seconds, 4),
                cubin_path=str(artifacts.cubin_path),
            )
        )
    return reports


def compile_and_analyze(
    jit_callable: Any,
    args: Sequence[Any],
    *,
    arch: str,
    options: str | None = None,
    dump_dir: str | os.PathLike,
    kwargs: dict[str, Any] | None = None,
    keep_ir: bool = False,
    ptxas_info: bool = True,
) -> list[StaticReport]:
    """:func:`compile_to_cubin` then :func:`static_reports` (same arguments, same errors).

    Reports come in launch order; :func:`main_report` picks the main kernel among them.
    """
    artifacts = compile_to_cubin(
        jit_callable,
        args,
        arch=arch,
        options=options,
        dump_dir=dump_dir,
        kwargs=kwargs,
        keep_ir=keep_ir,
        ptxas_info=ptxas_info,
    )
    return static_reports(artifacts)


def main_report(reports: Sequence[StaticReport]) -> StaticReport:
    """The main kernel of one compile's reports: most tensor-core MMA instructions, then most
    SASS instructions, then first launched.

    One ``cute.compile`` can hold several kernels (e.g. a preprocessing kernel launched before
    the main one, as in FMHA backward); launch order alone does not say which is the main.

    Raises:
        StaticAnalysisError: ``reports`` is empty.
    """
    if not reports:
        raise StaticAnalysisError("no kernel function was found in the compiled module")
    ranked = sorted(
        enumerate(reports),
        key=lambda ir: (-ir[1].categories.get("mma", 0), -ir[1].instructions, ir[0]),
    )
    return ranked[0][1]


#: Category columns :func:`format_table` shows by default.
TABLE_CATEGORIES: tuple[str, ...] = (
    "mma",
    "tma",
    "tmem",
    "mbarrier",
    "bar",
    "ldgsts",
    "ldsm_stsm",
    "lds_sts",
    "ldg_stg",
    "local",
    "fp32",
    "mufu",
    "conversion",
)


def _short(name: str, width: int) -> str:
    if len(name) <= width:
        return name
    keep = width - 1
    return name[: keep - keep // 3] + "…" + name[-(keep // 3) :]


def format_table(
    reports: Iterable[StaticReport],
    *,
    categories: Sequence[str] = TABLE_CATEGORIES,
    name_width: int = 48,
) -> str:
    """Markdown table: one row per report; resources, then SASS counts per category.

    Columns: kernel (shortened to ``name_width`` characters), arch, registers/thread,
    spill store/load bytes, stack bytes, static and dynamic SMEM bytes (``?`` when the
    dynamic amount is decided at run time), cubin bytes, SASS instructions, and one column
    per category in ``categories``.
    """

    def cell(v: Any) -> str:
        return "?" if v is None else str(v)

    head = ["kernel", "arch", "regs", "spill st/ld B", "stack B", "smem static B",
            "smem dyn B", "cubin B", "SASS instr", *categories]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in reports:
        row = [
            f"`{_short(r.kernel, name_width)}`",
            r.arch,
            cell(r.registers),
            f"{cell(r.spill_store_bytes)}/{cell(r.spill_load_bytes)}",
            cell(r.stack_bytes),
            cell(r.static_smem_bytes),
            cell(r.dynamic_smem_bytes),
            cell(r.cubin_bytes),
            cell(r.instructions),
            *(cell(r.categories.get(c, 0)) for c in categories),
        ]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"
