"""Decide from the target SM suffix whether a kernel can run on this device (host code).

Shown in knowledge/languages/cute-dsl/anti-patterns/tcgen05-code-on-sm90.md.
"""

# ruff: noqa: E402  (the shown region starts with its own imports)

SM = "generic"

# snippet:begin
import re


def parse_sm(s):  # "sm_100a" -> (100, "a")
    m = re.fullmatch(r"sm_(\d+)([af]?)", s)
    return int(m.group(1)), m.group(2)


def runs_on(target, device_sm):
    t, suffix = parse_sm(target)
    d, _ = parse_sm(device_sm)
    if suffix == "a":  # arch-specific: exactly this SM
        return d == t
    if suffix == "f":  # family: same major generation, newer or equal
        return d // 10 == t // 10 and d >= t
    return d >= t  # plain PTX target: forward compatible


def plan_run(kernel_name, targets, device_sm):
    if not any(runs_on(t, device_sm) for t in targets):
        print(
            f"{kernel_name} targets {' or '.join(targets)}; this device is {device_sm}: not run "
            "(static analysis instead)"
        )
        return "static"  # compile with fake tensors and CUTE_DSL_ARCH=targets[0]
    return "run"


# snippet:end


def compile_snippet():
    assert plan_run("dense_gemm (tcgen05)", ["sm_100a"], "sm_90") == "static"
    assert plan_run("dense_gemm (tcgen05)", ["sm_100a", "sm_103a"], "sm_103") == "run"
    assert plan_run("hopper dense_gemm", ["sm_90a"], "sm_90") == "run"
    assert plan_run("hopper dense_gemm", ["sm_90a"], "sm_100") == "static"  # 'a': exact SM
    assert runs_on("sm_100f", "sm_103") and not runs_on("sm_100f", "sm_120")
    assert runs_on("sm_80", "sm_90") and runs_on("sm_80", "sm_100")
    return "sm_100a refused on sm_90, sm_90a accepted on sm_90 only, sm_100f within family 10"


def check():
    """On the GPU: the device's own SM (from torch) against the two targets."""
    import torch

    major, minor = torch.cuda.get_device_capability()
    here = f"sm_{major}{minor}"
    compile_snippet()
    return f"device {here}: sm_90a -> {plan_run('h', ['sm_90a'], here)}, " + (
        f"sm_100a -> {plan_run('b', ['sm_100a'], here)}"
    )
