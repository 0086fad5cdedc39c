"""kernelplan.cache: the persistent static-analysis cache.

A change of any key component misses; a hit returns the stored result without planning or
compiling (and without importing the DSL or torch); a corrupt entry is reported, ignored and
replaced. One test compiles the in-house axpby kernel for sm_80 (about a second).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from kernelplan import Config, KernelPlan, Problem, Target, TensorSpec, Workload
from kernelplan import cache as cachemod


@dataclass(frozen=True)
class FakeProblem(Problem):
    n: int = 1024
    dtype: str = "float32"


class FakeWorkload(Workload):
    name: ClassVar[str] = "fake"
    problem_type: ClassVar[type[Problem]] = FakeProblem

    def tensor_specs(self, problem):
        return {"x": TensorSpec((problem.n,), problem.dtype)}

    def reference(self, problem, inputs):
        return {}

    def flops_bytes(self, problem):
        return 0.0, 0.0


@dataclass(frozen=True)
class FakeConfig(Config):
    tile: tuple[int, int] = (128, 1)


class FakePlan(KernelPlan):
    """A plan that must never be planned: hits must not reach ``plan()``."""

    name: ClassVar[str] = "fake"
    package: ClassVar[str] = "tests"
    workload = FakeWorkload()
    target_sm: ClassVar[tuple[str, ...]] = ("sm_80",)
    config_type = FakeConfig

    def plan(self, problem, config, target):
        raise AssertionError("plan() called: the cache should have answered")


PROB = FakeProblem(n=1024, dtype="float32")
CFG = FakeConfig(tile=(128, 1))
SM80 = Target("sm_80", 108)
RESULT = {"kernel": "k", "arch": "sm_80", "registers": 42, "categories": {}, "functions": []}


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "kpcache"
    monkeypatch.setenv(cachemod.CACHE_ENV, str(d))
    return d


def _key(plan=None, prob=PROB, cfg=CFG, target=SM80):
    return cachemod.static_key(plan or FakePlan(), prob, cfg, target)[0]


# --------------------------------------------------------------------------- the key


@pytest.mark.parametrize(
    "change",
    [
        "problem",
        "dtype",
        "config",
        "arch",
        "sm_count",
        "dsl_version",
        "cutlass_commit",
        "analyser",
        "devices",
        "cute_dsl_env",
        "tool",
    ],
)
def test_a_changed_key_component_misses(change, monkeypatch):
    base = _key()
    assert base == _key(), "the key must be deterministic"
    prob, cfg, target = PROB, CFG, SM80
    if change == "problem":
        prob = prob.replace(n=2048)
    elif change == "dtype":
        prob = prob.replace(dtype="float16")
    elif change == "config":
        cfg = cfg.replace(tile=(256, 1))
    elif change == "arch":
        target = Target("sm_90a", 108)
    elif change == "sm_count":
        target = Target("sm_80", 54, "--sm_count")
    elif change == "dsl_version":
        real = cachemod._dist_version
        monkeypatch.setattr(
            cachemod, "_dist_version", lambda d: "9.9.9" if d == "nvidia-cutlass-dsl" else real(d)
        )
    elif change == "cutlass_commit":
        monkeypatch.setattr(cachemod, "_cutlass_commit", lambda: "0" * 40)
    elif change == "analyser":
        monkeypatch.setattr(cachemod, "analyser_digests", lambda: {"static.py": "changed"})
    elif change == "devices":
        monkeypatch.setattr(cachemod, "device_fingerprint", lambda: "NVIDIA B200")
    elif change == "cute_dsl_env":
        monkeypatch.setenv("CUTE_DSL_OPT_LEVEL", "1")
    elif change == "tool":
        monkeypatch.setattr(cachemod, "_tool_identity", lambda name: None)
    assert _key(prob=prob, cfg=cfg, target=target) != base


def _examples_tree(root: Path) -> Path:
    ex = root / "examples" / "python" / "CuTeDSL"
    (ex / "cute" / "demo").mkdir(parents=True)
    (ex / "helpers").mkdir()
    (ex / "helpers" / "__init__.py").write_text("")
    (ex / "helpers" / "demo_helpers.py").write_text("X = 1\n")
    (ex / "cute" / "demo" / "local_util.py").write_text("Y = 2\n")
    (ex / "cute" / "demo" / "demo.py").write_text(
        "import cutlass\nfrom helpers import demo_helpers\nimport local_util\n"
    )
    return ex


def test_example_and_its_helper_modules_are_in_the_key(tmp_path, monkeypatch):
    ex = _examples_tree(tmp_path / "cutlass")
    monkeypatch.setenv("CUTLASS_DIR", str(tmp_path / "cutlass"))
    monkeypatch.setattr(cachemod, "_cutlass_commit", lambda: "fixed")
    files = cachemod.example_digests("cute/demo/demo.py")
    assert set(files) == {
        "cute/demo/demo.py",
        "helpers/__init__.py",
        "helpers/demo_helpers.py",
        "cute/demo/local_util.py",
    }

    class DemoPlan(FakePlan):
        source = "cute/demo/demo.py"

    k0 = _key(DemoPlan())
    for f, text in [
        ("helpers/demo_helpers.py", "X = 3\n"),
        ("cute/demo/local_util.py", "Y = 4\n"),
        ("cute/demo/demo.py", "import cutlass\nfrom helpers import demo_helpers\n"),
    ]:
        (ex / f).write_text(text)
        k1 = _key(DemoPlan())
        assert k1 != k0, f"an edit of {f} must miss"
        k0 = k1


def test_adapter_and_the_modules_it_imports_are_in_the_key(tmp_path, monkeypatch):
    pkg = tmp_path / "src" / "kp_demo_pkg"
    (pkg / "k").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "k" / "__init__.py").write_text("")
    (pkg / "shared.py").write_text("TILE = 128\n")
    (pkg / "k" / "k.py").write_text(
        "from ..shared import TILE\n"
        "from tests.test_cache import FakePlan\n"
        "class KPlan(FakePlan):\n    name = 'k'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    import importlib

    mod = importlib.import_module("kp_demo_pkg.k.k")
    files = cachemod.adapter_digests(mod.KPlan)
    assert any(f.endswith("kp_demo_pkg/shared.py") for f in files)
    assert any(f.endswith("kp_demo_pkg/k/k.py") for f in files)
    assert any(f.endswith("tests/test_cache.py") for f in files), "base classes count"
    k0 = _key(mod.KPlan())
    (pkg / "shared.py").write_text("TILE = 256\n")
    assert _key(mod.KPlan()) != k0


# --------------------------------------------------------------------------- the store


def test_hit_returns_the_stored_result_without_planning(cache_dir, tmp_path):
    plan = FakePlan()
    key, comps = cachemod.static_key(plan, PROB, CFG, SM80)
    cubin = tmp_path / "x.cubin"
    cubin.write_bytes(b"\x7fELF-not-really")
    stored = cachemod.StaticCache().put(key, comps, RESULT, {"main.cubin": cubin})
    assert stored["cubin_path"].startswith(str(cache_dir))
    st = plan.run_static(PROB, CFG, SM80)  # FakePlan.plan() would raise
    assert st["registers"] == 42 and st["label"] == "tests/fake"
    assert st["cache"]["hit"] is True and st["cache"]["key"] == key
    assert Path(st["cubin_path"]).read_bytes() == cubin.read_bytes()


@pytest.mark.parametrize("junk", [b"{not json", b"[]", b'{"key": "other"}', b"\x00\xff" * 10, b""])
def test_corrupt_entry_is_ignored_with_a_warning(cache_dir, capsys, junk):
    plan = FakePlan()
    key, comps = cachemod.static_key(plan, PROB, CFG, SM80)
    store = cachemod.StaticCache()
    store.put(key, comps, RESULT)
    (store.entry_dir(key) / store.ENTRY).write_bytes(junk)
    assert store.get(key, comps) is None
    assert "ignoring corrupt compile-cache entry" in capsys.readouterr().err
    with pytest.raises(AssertionError, match="plan\\(\\) called"):
        plan.run_static(PROB, CFG, SM80)  # a miss: goes on to plan (and would compile)
    store.put(key, comps, RESULT)  # replaced by the next store
    assert store.get(key, comps)["registers"] == 42


def test_entry_whose_components_differ_is_not_used(cache_dir):
    plan = FakePlan()
    key, comps = cachemod.static_key(plan, PROB, CFG, SM80)
    store = cachemod.StaticCache()
    store.put(key, {**comps, "python": "2.7"}, RESULT)
    assert store.get(key, comps) is None


def test_cache_off(monkeypatch):
    monkeypatch.setenv(cachemod.CACHE_ENV, "off")
    store = cachemod.StaticCache()
    assert not store.enabled and store.get("0" * 64) is None
    assert store.put("0" * 64, {}, RESULT) is None


def test_records_written_from_an_entry_are_remembered(cache_dir, tmp_path):
    plan = FakePlan()
    key, comps = cachemod.static_key(plan, PROB, CFG, SM80)
    store = cachemod.StaticCache()
    store.put(key, comps, RESULT)
    results = tmp_path / "results"
    rec = results / "tests" / "fake" / "r.json"
    rec.parent.mkdir(parents=True)
    rec.write_text("{}")
    assert store.record_under(key, results) is None
    store.note_record(key, rec)
    assert store.record_under(key, results) == rec.resolve()
    assert store.record_under(key, tmp_path / "elsewhere") is None
    rec.unlink()
    assert store.record_under(key, results) is None


def test_real_compile_misses_then_hits(cache_dir):
    pytest.importorskip("cutlass")
    from .inhouse_axpby import AxpbyPlan

    plan = AxpbyPlan()
    prob = plan.problem(n=4096)
    cfg = plan.default_config(prob)
    first = plan.run_static(prob, cfg)
    assert first["cache"]["hit"] is False and first["registers"] > 0
    assert first["res_usage_check"]["match"] is True
    assert Path(first["cubin_path"]).is_relative_to(cache_dir)
    second = plan.run_static(prob, cfg)
    assert second["cache"]["hit"] is True
    drop = ("cache",)
    assert {k: v for k, v in first.items() if k not in drop} == {
        k: v for k, v in second.items() if k not in drop
    }
    # n is a runtime field of the compiled code, but the static result is per problem
    other = plan.run_static(plan.problem(n=8192), cfg)
    assert other["cache"]["hit"] is False


def test_a_hit_imports_neither_the_dsl_nor_torch(tmp_path):
    """Run in a fresh interpreter: store an entry, then answer run_static from it."""
    code = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
        from tests.test_cache import FakePlan, PROB, CFG, RESULT, SM80
        from kernelplan import cache
        plan = FakePlan()
        key, comps = cache.static_key(plan, PROB, CFG, SM80)
        cache.StaticCache().put(key, comps, RESULT)
        st = plan.run_static(PROB, CFG, SM80)
        assert st["cache"]["hit"], st
        print(sorted(m for m in ("cutlass", "torch") if m in sys.modules))
        """
    )
    env = {**__import__("os").environ, cachemod.CACHE_ENV: str(tmp_path / "c")}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout.strip().replace("'", '"')) == []


def test_run_static_many_answers_in_order_with_errors_inline(cache_dir):
    from kernelplan import ShapeError

    class Refusing(FakePlan):
        name = "refusing"

        def plan(self, problem, config, target):
            raise ShapeError("refused")

    hit = FakePlan()
    key, comps = cachemod.static_key(hit, PROB, CFG, SM80)
    cachemod.StaticCache().put(key, comps, RESULT)
    items = [(hit, PROB, CFG, SM80), (Refusing(), PROB, CFG, SM80), (hit, PROB, CFG, SM80)]
    out = list(cachemod.run_static_many(items, jobs=2))
    assert [i for i, _, _ in out] == [0, 1, 2]
    assert out[0][1]["cache"]["hit"] and out[2][1]["registers"] == 42
    assert isinstance(out[1][1], ShapeError)


def test_an_equal_static_record_is_found_again(tmp_path, monkeypatch):
    from kernelplan.records import write_record

    plan = FakePlan()
    plan.source = None
    results = tmp_path / "results"
    st = {**RESULT, "compile_seconds": 1.0, "cubin_path": "/a"}
    env = {
        "nvidia_cutlass_dsl": cachemod._dist_version("nvidia-cutlass-dsl"),
        "cutlass_commit_sources": cachemod._cutlass_commit(),
    }
    rec = {
        "kind": "static",
        "package": "tests",
        "kernel": "fake",
        "source": None,
        "problem": PROB.to_dict(),
        "config": CFG.to_dict(),
        "env": env,
        "static": st,
    }
    path = write_record(rec, results)
    again = {**RESULT, "compile_seconds": 2.5, "cubin_path": "/b"}  # same numbers, new compile
    assert cachemod.matching_static_record(results, plan, PROB, CFG, again) == path
    other = {**RESULT, "registers": 43}
    assert cachemod.matching_static_record(results, plan, PROB, CFG, other) is None
    assert cachemod.matching_static_record(results, plan, PROB.replace(n=1), CFG, again) is None
    # a schema-1 record (no workload, target or schema-2 dataclass dicts) is read too
    old = {**rec, "schema": 1, "config": {**CFG.to_dict(), "sm_count": 132}}
    old_path = write_record(old, tmp_path / "old")
    assert cachemod.matching_static_record(tmp_path / "old", plan, PROB, CFG, again) == old_path
