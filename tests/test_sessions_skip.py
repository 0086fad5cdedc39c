"""Package sessions: a peer that is not installed and a problem a backend refuses at run time
are listed as skipped, with their line, and do not fail the session; a real failure does."""

from kernelplan import ShapeError, sessions
from kernelplan.device import DeviceInfo
from kernelplan.errors import KernelPlanError, NotInstalled
from tests.inhouse_axpby import AxpbyPlan


class _Peer(AxpbyPlan):
    name = "peer_missing"
    target_sm = ()

    def run_check(self, *a, **kw):
        raise NotInstalled("peer_missing needs somepeer: pip install somepeer==1.0")


class _Refuses(AxpbyPlan):
    name = "backend_refuses"
    target_sm = ()

    def run_check(self, *a, **kw):
        raise ShapeError("backend_refuses: the backend refuses this problem")


class _Broken(AxpbyPlan):
    name = "broken"
    target_sm = ()

    def run_check(self, *a, **kw):
        raise KernelPlanError("broken: a real failure")


def _run(monkeypatch, plans):
    dev = DeviceInfo(name="NVIDIA H200", sm="sm_90", sm_count=132, memory_bytes=1, l2_bytes=1)
    monkeypatch.setattr(sessions.devmod, "current_device", lambda: dev)
    monkeypatch.setattr(sessions, "_plans", lambda package, kernel: plans)
    monkeypatch.setattr(AxpbyPlan, "check_problems", lambda self: [self.problem(n=1024)])
    lines: list[str] = []
    rc = sessions.check_package("axpby", record=False, log=lines.append)
    return rc, "\n".join(lines)


def test_missing_peer_and_runtime_refusal_are_skips(monkeypatch):
    rc, out = _run(monkeypatch, [_Peer(), _Refuses()])
    assert rc == 0
    assert "skip: peer_missing needs somepeer: pip install somepeer==1.0" in out
    assert "skip: backend_refuses n=1024" in out and "the backend refuses" in out
    assert "skipped: not installed here" in out and "skipped: not taken" in out


def test_a_real_failure_still_fails(monkeypatch):
    rc, out = _run(monkeypatch, [_Peer(), _Broken()])
    assert rc == 1
    assert "broken: a real failure" in out


# -- the CUTLASS sources absent (fresh-user trial 4, defects 1-3) ------------------------------
class _Imported(AxpbyPlan):
    """An imported CUTLASS example: it names its ``source``; never run here."""

    name = "imported_example"
    target_sm = ("sm_90a",)
    source = "cute/hopper/kernel/nowhere.py"

    def run_check(self, *a, **kw):
        raise AssertionError("an example whose sources are absent must not run")

    def run_static(self, *a, **kw):
        raise AssertionError("an example whose sources are absent must not compile")


class _Result:
    rel_norm = 0.0

    def line(self) -> str:
        return "PASS"

    def to_dict(self) -> dict:
        return {}


class _Ours(AxpbyPlan):
    name = "ours"
    target_sm = ()

    def run_check(self, *a, **kw):
        return True, [_Result()], {}


def test_absent_sources_skip_the_imported_examples_and_run_the_rest(monkeypatch, tmp_path):
    """CUTLASS_DIR naming a folder without the sources is a skip (one line naming the folder
    and how to get them), not "static FAILED"; our own kernel still runs, and the exit is 0."""
    monkeypatch.setenv("CUTLASS_DIR", str(tmp_path / "nonexistent"))
    rc, out = _run(monkeypatch, [_Imported(), _Ours()])
    assert rc == 0, out
    skips = [ln for ln in out.splitlines() if ln.startswith("skip:") and "CUTLASS" in ln]
    assert len(skips) == 1 and skips[0].startswith("skip: imported_example (needs the CUTLASS")
    assert f"CUTLASS_DIR={tmp_path / 'nonexistent'}" in skips[0]
    assert "git submodule update --init third_party/cutlass" in skips[0]
    assert "skipped: needs the CUTLASS sources" in out and "FAILED" not in out
    assert "| ours | n=1024 alpha=1.5 | PASS |" in out


def test_analyze_skips_the_imported_examples_without_sources(monkeypatch, tmp_path):
    monkeypatch.setenv("CUTLASS_DIR", str(tmp_path / "nonexistent"))
    monkeypatch.setattr(sessions, "_plans", lambda package, kernel: [_Imported()])
    lines: list[str] = []
    rc = sessions.analyze_package("axpby", record=False, log=lines.append)
    assert rc == 0, lines
    assert lines[0].startswith("skip: imported_example (needs the CUTLASS sources): ")
    assert "1 skipped: no CUTLASS sources" in lines[-1] and "failed" not in lines[-1]


def test_the_sources_present_skip_nothing(monkeypatch):
    monkeypatch.setattr(sessions, "examples_dir", lambda: "/somewhere")
    assert sessions.sources_absent([_Imported(), _Ours()]) == ([], None)


def _nox(*args: str, env: dict[str, str] | None = None):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    return subprocess.run(
        [sys.executable, "-m", "nox", "-f", str(root / "noxfile.py"), *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def test_nox_sessions_name_an_unknown_package_before_any_cutlass_handling():
    """analyze/profile/gpu-ci -- nosuchpkg: the list of packages, not the CUTLASS message."""
    for session, args in (("analyze", ["nosuchpkg"]), ("gpu-ci", ["--reps", "3", "nosuchpkg"])):
        proc = _nox("-s", session, "--", *args, env={"CUTLASS_DIR": "/nonexistent"})
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0
        assert "unknown package 'nosuchpkg' (known: " in out and "mla" in out, out
        assert "CUTLASS" not in out, out


def test_nox_new_without_sources_ends_with_one_line():
    proc = _nox("-s", "new", "--", "gemm", "x", "--from", "cute/a.py",
                env={"CUTLASS_DIR": "/nonexistent"})  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    lines = [ln for ln in out.splitlines() if "CUTLASS_DIR=/nonexistent" in ln]
    assert len(lines) == 1 and "git submodule update --init third_party/cutlass" in lines[0], out
