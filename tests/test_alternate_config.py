"""Per-implementation config items in the alternated table (``kernel:key=value,...``): parsed
and checked on any machine, before the GPU is looked for; each refusal is one line."""

import pytest

from kernelplan import KernelPlanError, alternate


def test_parse_impl_spec():
    assert alternate.parse_impl_spec("mla_decode_sm90") == ("mla_decode_sm90", {})
    assert alternate.parse_impl_spec("mla/mla_decode_sm90:loads=tma") == (
        "mla/mla_decode_sm90",
        {"loads": "tma"},
    )
    assert alternate.parse_impl_spec("mla_decode_sm90:loads=tma, splits=2") == (
        "mla_decode_sm90",
        {"loads": "tma", "splits": "2"},
    )
    for bad, needle in [
        (":loads=tma", "no implementation before"),
        ("mla_decode_sm90:loads", "key=value"),
        ("mla_decode_sm90:=tma", "key=value"),
        ("mla_decode_sm90:loads=tma,loads=cpasync", "given twice"),
    ]:
        with pytest.raises(KernelPlanError, match=needle) as e:
            alternate.parse_impl_spec(bad)
        assert "\n" not in str(e.value)


def test_impl_label():
    assert alternate.impl_label("mla", "mla_decode_sm90", {}) == "mla/mla_decode_sm90"
    assert (
        alternate.impl_label("mla", "mla_decode_sm90", {"loads": "tma", "splits": "2"})
        == "mla/mla_decode_sm90[loads=tma,splits=2]"
    )


def _one_line_error(capsys, argv):
    rc = alternate.main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    return err[0]


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(alternate.devmod, "current_device", lambda: None)


def test_good_config_reaches_the_gpu_check(capsys, no_gpu):
    line = _one_line_error(
        capsys, ["mla_decode", "mla_decode_sm90", "mla_decode_sm90:loads=tma", "--no-record"]
    )
    assert line == "error: the comparison table needs a CUDA GPU; none is visible"


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("mla_decode_sm90:loads=bogus", "loads"),
        ("mla_decode_sm90:no_such_key=1", "unknown config key 'no_such_key'"),
        ("mla_decode_sm90:splits=99", "splits must be in 0..64"),
    ],
)
def test_bad_config_is_refused_without_a_gpu(capsys, no_gpu, spec, needle):
    line = _one_line_error(capsys, ["mla_decode", spec, "--no-record"])
    assert needle in line


def test_same_implementation_and_config_twice_is_refused(capsys, no_gpu):
    line = _one_line_error(
        capsys, ["mla_decode", "mla_decode_sm90:loads=tma", "mla/mla_decode_sm90:loads=tma"]
    )
    assert "named twice with the same config: mla/mla_decode_sm90[loads=tma]" in line


def test_where_keeps_the_matching_problems():
    """``--where KEY=VALUE`` (repeatable) keeps the profile problems with those fields: the
    MLA table's one h=16 row, its s=2 row by two filters; an unknown key, a value no problem
    has or an item without ``=`` is one line naming what there is."""
    from kernelplan.workloads import get

    probs = get("mla_decode").profile_problems()
    kept = alternate.select_problems(probs, ["h=16"])
    assert [(p.b, p.t, p.h) for p in kept] == [(128, 4096, 16)]
    kept = alternate.select_problems(probs, ["s=2", "b=32"])
    assert [(p.b, p.s, p.t) for p in kept] == [(32, 2, 4096)]
    assert alternate.select_problems(probs, []) == probs
    for bad, needle in [
        (["hx=16"], "no field 'hx'"),
        (["h=17"], "values there: 128, 16, 64"),
        (["h"], "KEY=VALUE"),
    ]:
        with pytest.raises(KernelPlanError, match=needle) as e:
            alternate.select_problems(probs, bad)
        assert "\n" not in str(e.value)


def test_where_is_checked_before_the_gpu(capsys, no_gpu):
    rc = alternate.main(["mla_decode", "mla_decode_sm90", "--where", "h=17"])
    assert rc != 0
    err = capsys.readouterr().err
    assert "no profile problem has h=17" in err and "Traceback" not in err


def test_problem_builds_the_workload_problem():
    """``--problem KEY=VALUE,...`` gives the table a problem of no list: each value parsed by
    its field's type (a tuple in brackets), the fields left out at their defaults; the
    workload's own validation still applies."""
    from kernelplan.workloads import get

    wl = get("mla_decode")
    (p,) = alternate.parse_problems(wl, ["b=128,t=4096,h=32"])
    assert (p.b, p.t, p.h, p.s, p.varlen) == (128, 4096, 32, 1, False)
    (p,) = alternate.parse_problems(wl, ["b=2,seqlens=[1,0],h=16"])
    assert p.seqlens == (1, 0) and p.lengths() == (1, 0)
    two = alternate.parse_problems(wl, ["b=4,t=64", "b=4,t=64,s=2"])
    assert [q.s for q in two] == [1, 2]
    assert alternate.split_items("a=1,b=[2,3],c=(4,5)") == ["a=1", "b=[2,3]", "c=(4,5)"]
    for bad, needle in [
        (["q=1"], "unknown problem key 'q'; known: b, s, t"),
        (["t=40x96"], "--problem t=40x96: not an int"),
        (["b"], "--problem items are key=value"),
        (["b=1,b=2"], "key 'b' given twice"),
        (["b=4,seqlens=[1,0]"], "--seqlens has 2 lengths but --b is 4"),
    ]:
        with pytest.raises(KernelPlanError, match=needle) as e:
            alternate.parse_problems(wl, bad)
        assert "\n" not in str(e.value)


def test_problem_is_checked_before_the_gpu_and_takes_where(capsys, no_gpu):
    """A bad ``--problem`` is one line on a machine without a GPU; ``--where`` then filters
    the ``--problem`` problems and says so when it keeps none."""
    rc = alternate.main(["mla_decode", "mla_decode_sm90", "--problem", "b=1,t=0x1"])
    err = capsys.readouterr().err
    assert rc == 2 and "--problem t=0x1: not an int" in err and "Traceback" not in err
    rc = alternate.main(
        ["mla_decode", "mla_decode_sm90", "--problem", "b=8,h=32", "--where", "h=16"]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "no --problem problem has h=16 (values there: 32)" in err
    rc = alternate.main(["mla_decode", "mla_decode_sm90", "--problem", "b=8,h=32"])
    err = capsys.readouterr().err
    assert rc == 2 and "needs a CUDA GPU" in err
