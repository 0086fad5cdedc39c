"""scripts/device/queue.sh: several device jobs in one call, bundled as they go (no GPU needed:
the jobs here are shell commands)."""

import subprocess
import tarfile
from pathlib import Path

import pytest

QUEUE = Path(__file__).resolve().parents[1] / "scripts" / "device" / "queue.sh"


def _run(tmp_path: Path, *cmds: str, budget: str = "540") -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "OUT": str(tmp_path / "out"), "WORK": str(tmp_path / "work"),
           "BUDGET_S": budget, "TICK_S": "1", "QOUT": str(tmp_path / "out")}  # fmt: skip
    return subprocess.run(
        ["bash", str(QUEUE), *cmds], env=env, capture_output=True, text=True, timeout=120
    )


def test_queue_runs_each_job_in_its_own_out_and_bundles_them(tmp_path):
    r = _run(tmp_path, 'echo one > "$OUT/a.txt"', "echo to-the-log; exit 3")
    assert r.returncode == 1  # the second job's rc 3
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["queue.tgz"]  # partial.tgz removed
    with tarfile.open(out / "queue.tgz") as tar:
        names = set(tar.getnames())
        assert {"./j1/a.txt", "./j2.log", "./summary.txt"} <= names
        summary = tar.extractfile("./summary.txt").read().decode()
        assert tar.extractfile("./j2.log").read().decode() == "to-the-log\n"
    lines = summary.splitlines()
    assert lines[0].startswith("j1: rc=0 ") and lines[1].startswith("j2: rc=3 ")


def test_queue_bundles_while_a_job_runs(tmp_path):
    """A call cut short still returns what the jobs before the cut wrote: partial.tgz is
    rewritten every TICK_S seconds while a job runs (here the job sees it appear)."""
    r = _run(tmp_path, 'echo x > "$OUT/first.txt"', 'sleep 3; tar tzf "$QOUT/partial.tgz"')
    assert r.returncode == 0, r.stdout
    with tarfile.open(tmp_path / "out" / "queue.tgz") as tar:
        listing = tar.extractfile("./j2.log").read().decode()
    assert "./j1/first.txt" in listing.splitlines()


def test_queue_skips_jobs_once_its_budget_is_spent(tmp_path):
    r = _run(tmp_path, "true", "true", budget="0")
    assert r.returncode == 1
    assert r.stdout.count("skipped (0 s budget spent)") == 2


@pytest.mark.parametrize("case", ["no-jobs", "work-inside-out"])
def test_queue_usage_errors_exit_2(tmp_path, case):
    if case == "no-jobs":
        r = _run(tmp_path)
    else:
        env = {"PATH": "/usr/bin:/bin", "OUT": str(tmp_path), "WORK": str(tmp_path / "w")}
        r = subprocess.run(["bash", str(QUEUE), "true"], env=env, capture_output=True,
                           text=True, timeout=60)  # fmt: skip
        assert "WORK must be outside OUT" in r.stderr
    assert r.returncode == 2


def test_queue_never_bundles_an_earlier_calls_files(tmp_path):
    """A WORK folder with files in it is refused (an earlier call's records would come back as
    this call's); without WORK every call gets a fresh folder; OUT unset is a usage error."""
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "old.log").write_text("earlier call\n")
    r = _run(tmp_path, "true")
    assert r.returncode == 2 and "is not empty" in r.stderr
    env = {"PATH": "/usr/bin:/bin", "OUT": str(tmp_path / "o2"), "TICK_S": "1"}
    for _ in range(2):
        r = subprocess.run(["bash", str(QUEUE), 'echo x > "$OUT/f"'], env=env,
                           capture_output=True, text=True, timeout=60)  # fmt: skip
        assert r.returncode == 0
        with tarfile.open(tmp_path / "o2" / "queue.tgz") as tar:
            assert sorted(n for n in tar.getnames() if n.startswith("./j")) == [
                "./j1", "./j1.log", "./j1/f"
            ]  # fmt: skip
    r = subprocess.run(["bash", str(QUEUE), "true"], env={"PATH": "/usr/bin:/bin"},
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 2 and "set OUT" in r.stderr
