"""kernelplan.jitcache: compiled CuTe DSL functions stored with the DSL's export_to_c and
loaded back with cute.runtime.load_module, across processes, on the CPU.

Each scenario runs in a fresh Python process (the DSL reads CUTE_DSL_ARCH once, at import;
here sm_90a, so nothing needs a GPU): a first process compiles and stores, a second one
finds, verifies and loads the entry without compiling (its compile hook raises), a corrupt
entry is recompiled and replaced with one warning line, KERNELPLAN_CACHE=off stores nothing.
Loading works on the CPU; only calling the loaded function needs the driver. About 30 s.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import cutlass
import cutlass.cute as cute
import pytest
from cuda.bindings import driver as cuda

from kernelplan import jitcache

ROOT = Path(__file__).resolve().parents[1]
THREADS = 128
TVM_FFI = "--enable-tvm-ffi"


@cute.kernel
def scale_kernel(x: cute.Tensor, alpha: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * THREADS + tidx
    if i < cute.size(x):
        x[i] = alpha * x[i]


@cute.jit
def scale(x: cute.Tensor, alpha: cutlass.Float32, stream: cuda.CUstream):
    """x *= alpha; every argument annotated, as export_to_c needs."""
    n = cute.size(x)
    scale_kernel(x, alpha).launch(
        grid=((n + THREADS - 1) // THREADS, 1, 1), block=(THREADS, 1, 1), stream=stream
    )


# Runs the steps given as JSON in argv[1]; prints one JSON result per step on the last line.
DRIVER = textwrap.dedent(
    """
    import json, os, sys
    import cutlass, cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_stream, make_fake_tensor
    from kernelplan import jitcache
    from tests.inhouse_axpby import axpby
    from tests.test_jitcache import scale

    def forbidden(fn, args, options):
        raise AssertionError("compiled although the cache should have hit")

    out = []
    base_env = dict(os.environ)
    for step in json.loads(sys.argv[1]):
        os.environ.clear()
        os.environ.update(base_env, **step.get("env", {}))  # each step's env, for that step
        x = make_fake_tensor(cutlass.Float32, (cute.sym_int(),), (1,), assumed_align=16)
        if step["kernel"] == "scale":
            fn, args = scale, (x, cutlass.Float32(2.0), make_fake_stream())
        else:
            y = make_fake_tensor(cutlass.Float32, (cute.sym_int(),), (1,), assumed_align=16)
            fn, args = axpby, (x, y, cutlass.Float32(1.5), make_fake_stream())
        compiled, info = jitcache.load_or_compile(
            fn, args, key=step["key"], options=step.get("options"), arch="sm_90a",
            directory=step["dir"], compile=forbidden if step.get("forbid") else None,
        )
        sig = getattr(getattr(compiled, "execution_args", None), "signature", None)
        info.update(
            type=type(compiled).__name__,
            load_from_binary=getattr(compiled, "load_from_binary", None),
            params=list(sig.parameters) if sig is not None else None,
            kernels=sorted(getattr(compiled, "kernel_info", None) or {}),
        )
        out.append(info)
    print(json.dumps(out))
    """
)


def run_steps(steps: list[dict], extra_env: dict | None = None) -> tuple[list[dict], str]:
    env = dict(os.environ)
    env.pop(jitcache.CACHE_ENV, None)
    env["CUTE_DSL_ARCH"] = "sm_90a"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env.update(extra_env or {})
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(steps)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


@pytest.fixture(scope="module")
def populated(tmp_path_factory):
    """One process: store 'main', 'obj' and 'json' (scale), then hit 'main' in the same
    process, try axpby (its stream is unannotated: the export fails), and compile with the
    cache off."""
    d = tmp_path_factory.mktemp("jit")
    off_dir = tmp_path_factory.mktemp("jit-off")
    steps = [
        {"kernel": "scale", "key": "main", "dir": str(d)},
        {"kernel": "scale", "key": "obj", "dir": str(d)},
        {"kernel": "scale", "key": "json", "dir": str(d)},
        {"kernel": "scale", "key": "main", "dir": str(d), "forbid": True},
        {"kernel": "axpby", "key": "axpby", "dir": str(d)},
        {"kernel": "scale", "key": "main", "dir": str(off_dir), "env": {"KERNELPLAN_CACHE": "off"}},
        {"kernel": "scale", "key": "main", "dir": str(d), "options": TVM_FFI},
    ]
    results, stderr = run_steps(steps)
    return d, off_dir, results, stderr


def test_miss_exports_a_complete_entry(populated):
    d, _, results, _ = populated
    info = results[0]
    assert info["cache"] == "miss" and info["reason"] == "absent" and info["stored"] is True
    assert info["compile_seconds"] > 0 and info["abi"] == "cute"
    entry = Path(info["path"])
    assert entry.is_relative_to(d)
    # <root>/<dsl version>-<commit>/<arch>/<sha256>
    assert entry.parent.name == "sm_90a" and entry.parent.parent.name.startswith("4.8.1-")
    assert {p.name for p in entry.iterdir()} == {"module.o", "module.h", "entry.json"}
    meta = json.loads((entry / "entry.json").read_text())
    obj = (entry / "module.o").read_bytes()
    assert obj[:4] == b"\x7fELF" and meta["object_bytes"] == len(obj)
    assert meta["object_sha256"] == hashlib.sha256(obj).hexdigest()
    assert meta["key"] == entry.name and meta["components"]["key"] == "main"
    assert meta["components"]["nvidia_cutlass_dsl"] == "4.8.1"
    assert meta["components"]["arch"] == "sm_90a"
    assert any("test_jitcache.py" in f for f in meta["components"]["implementation"])
    assert meta["prefix"] in (entry / "module.h").read_text()
    assert any("scale_kernel" in k for k in meta["kernels"])
    # different keys, different entries; no temporary folders left behind
    assert len({r["path"] for r in results[:3]}) == 3
    assert not [p for p in entry.parent.iterdir() if p.name.startswith(".")]


def test_same_process_second_call_loads(populated):
    _, _, results, _ = populated
    hit = results[3]
    assert hit["cache"] == "hit" and hit["path"] == results[0]["path"]
    assert hit["load_from_binary"] is True


def test_new_process_hits_without_compiling(populated):
    d, _, first, _ = populated
    results, stderr = run_steps(
        [
            {"kernel": "scale", "key": "main", "dir": str(d), "forbid": True},
            {"kernel": "scale", "key": "main", "dir": str(d), "forbid": True, "options": TVM_FFI},
        ]
    )
    hit = results[0]
    assert hit["cache"] == "hit", hit
    assert hit["path"] == first[0]["path"]
    assert hit["type"] == "CudaDialectJitCompiledFunction" and hit["load_from_binary"] is True
    assert hit["params"] == ["x", "alpha", "stream"]  # the Python signature came back
    assert hit["kernels"] == first[0]["kernels"] and hit["kernels"]
    assert hit["compile_seconds"] == pytest.approx(first[0]["compile_seconds"], abs=1e-3)
    assert hit["load_seconds"] < hit["compile_seconds"] + 1.0
    assert "warning" not in stderr
    # the TVM-FFI compiled function (options="--enable-tvm-ffi") exports and loads too
    tvm = results[1]
    assert first[6]["cache"] == "miss" and first[6]["stored"] and first[6]["abi"] == "tvm-ffi"
    assert first[6]["path"] != first[0]["path"]  # options are part of the key
    assert tvm["cache"] == "hit" and tvm["abi"] == "tvm-ffi" and tvm["type"] == "Function"


def test_corrupt_entries_recompile_replace_and_warn_once_each(populated):
    d, _, first, _ = populated
    obj_entry, json_entry = Path(first[1]["path"]), Path(first[2]["path"])
    good = (obj_entry / "module.o").read_bytes()
    (obj_entry / "module.o").write_bytes(good[: len(good) // 2])  # a partial object
    (json_entry / "entry.json").write_text('{"schema": 1, "key"')  # a partial entry.json
    steps = [
        {"kernel": "scale", "key": "obj", "dir": str(d)},
        {"kernel": "scale", "key": "json", "dir": str(d)},
        {"kernel": "scale", "key": "obj", "dir": str(d), "forbid": True},
        {"kernel": "scale", "key": "json", "dir": str(d), "forbid": True},
    ]
    results, stderr = run_steps(steps)
    assert [r["cache"] for r in results] == ["miss", "miss", "hit", "hit"]
    assert "sha256" in results[0]["reason"] and results[0]["reason"].startswith("corrupt")
    assert results[1]["reason"].startswith("corrupt: JSONDecodeError")
    assert all(r["stored"] for r in results[:2])
    warnings = [ln for ln in stderr.splitlines() if "corrupt JIT-cache entry" in ln]
    assert len(warnings) == 2 and all(ln.startswith("warning: ") for ln in warnings)
    meta = json.loads((obj_entry / "entry.json").read_text())
    fixed = (obj_entry / "module.o").read_bytes()
    assert meta["object_sha256"] == hashlib.sha256(fixed).hexdigest() and len(fixed) == len(good)


def test_cache_off_bypasses(populated):
    _, off_dir, results, _ = populated
    off = results[5]
    assert off["cache"] == "off" and off["path"] is None and off["compile_seconds"] > 0
    assert off["load_from_binary"] is False
    assert list(Path(off_dir).iterdir()) == []  # `directory` given, but off wins


def test_export_failure_returns_the_compiled_function(populated):
    """axpby's ``stream`` has no cuda.CUstream annotation: export_to_c refuses it."""
    _, _, results, stderr = populated
    info = results[4]
    assert info["cache"] == "miss" and info["stored"] is False
    assert info["reason"].startswith("export failed") and "stream" in info["reason"]
    assert info["type"] == "CudaDialectJitCompiledFunction"
    assert not Path(info["path"]).exists()
    assert not [p for p in Path(info["path"]).parent.iterdir() if p.name.startswith(".")]
    assert sum("not stored" in ln for ln in stderr.splitlines()) == 1


def test_root_follows_kernelplan_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELPLAN_CACHE", "off")
    assert jitcache.jit_cache_root(tmp_path) is None
    monkeypatch.setenv("KERNELPLAN_CACHE", str(tmp_path))
    assert jitcache.jit_cache_root() == tmp_path / "jit"
    assert jitcache.jit_cache_root(tmp_path / "x") == tmp_path / "x"
    monkeypatch.delenv("KERNELPLAN_CACHE")
    from kernelplan.cutlass_src import repo_root

    assert jitcache.jit_cache_root() == repo_root() / ".cache" / "jit"


def test_key_components_change_with_what_changes_the_code():
    class FakeTensorLike:
        pass

    args = (FakeTensorLike(), 7, "s")
    base, comps = jitcache.jit_components(scale, args, key="k", options=None, arch="sm_90a")
    again, _ = jitcache.jit_components(scale, args, key="k", options=None, arch="sm_90a")
    assert base == again
    assert comps["arg_kinds"][1:] == [7, "s"]  # constants by value, objects by type only
    for change in (
        {"key": "k2"},
        {"options": "--opt-level 2"},
        {"arch": "sm_100a"},
    ):
        kw = {"key": "k", "options": None, "arch": "sm_90a", **change}
        assert jitcache.jit_components(scale, args, **kw)[0] != base, change
    assert (
        jitcache.jit_components(
            scale, (FakeTensorLike(), 8, "s"), key="k", options=None, arch="sm_90a"
        )[0]
        != base
    )


def test_cute_kernel_key_ignores_dynamic_extents_only():
    from kernelplan.kernel import STREAM, CuteKernel, TensorSpec

    def kernel(n: int, leading_dim: int | None = 0, **meta) -> CuteKernel:
        spec = TensorSpec((n,), "float32", leading_dim=leading_dim)
        return CuteKernel("s", scale, lambda t: (t["x"], 2.0, STREAM), {"x": spec}, meta=meta)

    key = jitcache.cute_kernel_key
    assert key(kernel(1000)) == key(kernel(4096))  # the extent is dynamic: not in the code
    assert key(kernel(1000, None)) != key(kernel(4096, None))  # static: it is
    assert key(kernel(1000)) != key(kernel(1000, max_active_clusters=132))
