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
