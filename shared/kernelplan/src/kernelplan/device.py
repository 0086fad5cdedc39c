"""The GPU in use: name, SM, clocks (through NVML), and whether a kernel's target SM runs on it.

SM naming follows nvcc: ``sm_90a`` is Hopper with its arch-specific features (WGMMA, TMA
multicast, setmaxnreg), ``sm_100a`` is B200/B300 (tcgen05, TMEM), ``sm_120a`` is GeForce
Blackwell (no tcgen05). An ``a`` target runs only on exactly that SM; a plain ``sm_80`` target
runs on any SM of that number or newer.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from .errors import KernelPlanError

_SM_RE = re.compile(r"^sm_(\d+)([af]?)$")

#: Names a reader knows the SMs by (for messages only).
SM_FAMILY = {
    80: "Ampere A100",
    86: "Ampere GA10x",
    89: "Ada",
    90: "Hopper H100/H200",
    100: "Blackwell B200/B300",
    103: "Blackwell Ultra B300",
    120: "Blackwell GeForce RTX 50xx",
}


class ArchMismatch(KernelPlanError):
    """A kernel's target SM is not the device's."""


def parse_sm(target: str) -> tuple[int, str]:
    """``"sm_90a"`` -> ``(90, "a")``.

    Raises:
        KernelPlanError: not of the form ``sm_<number>[a|f]``.
    """
    m = _SM_RE.match(target.strip())
    if not m:
        raise KernelPlanError(
            f"unknown SM {target!r}: use nvcc's names such as sm_80, sm_90a, sm_100a, sm_120a"
        )
    return int(m.group(1)), m.group(2)


def sm_of_capability(major: int, minor: int) -> str:
    """Compute capability (9, 0) -> ``"sm_90"``."""
    return f"sm_{major}{minor}"


def runs_on(target: str, device_sm: str) -> bool:
    """Whether code built for ``target`` runs on a device of SM ``device_sm`` (e.g. ``sm_90``).

    ``sm_XXa`` (arch-specific) needs exactly SM XX; ``sm_XXf`` needs the same family (same
    tens digit, newer or equal); plain ``sm_XX`` runs on SM XX or newer.
    """
    t_num, t_suffix = parse_sm(target)
    d_num, _ = parse_sm(device_sm)
    if t_suffix == "a":
        return d_num == t_num
    if t_suffix == "f":
        return d_num // 10 == t_num // 10 and d_num >= t_num
    return d_num >= t_num


def describe_sm(target: str) -> str:
    num, _ = parse_sm(target)
    fam = SM_FAMILY.get(num)
    return f"{target} ({fam})" if fam else target


@dataclass
class DeviceInfo:
    """What a result record says about the GPU (all clocks in MHz, memory in bytes)."""

    name: str
    sm: str
    sm_count: int
    memory_bytes: int
    l2_bytes: int
    driver: str | None = None
    cuda_runtime: str | None = None
    clocks_max: dict[str, int] = field(default_factory=dict)
    uuid: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _nvml():
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:
        return None
    return pynvml


def _nvml_handle(index: int):
    nv = _nvml()
    if nv is None:
        return None, None
    try:
        return nv, nv.nvmlDeviceGetHandleByIndex(index)
    except Exception:
        return None, None


def current_device() -> DeviceInfo | None:
    """The current CUDA device, or None where torch sees no GPU.

    Name, SM and sizes come from torch; driver and clocks from NVML when ``nvidia-ml-py``
    is importable.
    """
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    idx = torch.cuda.current_device()
    p = torch.cuda.get_device_properties(idx)
    info = DeviceInfo(
        name=p.name,
        sm=sm_of_capability(p.major, p.minor),
        sm_count=p.multi_processor_count,
        memory_bytes=p.total_memory,
        l2_bytes=getattr(p, "L2_cache_size", 0) or 0,
        cuda_runtime=torch.version.cuda,
    )
    nv, h = _nvml_handle(idx)
    if h is not None:
        try:
            info.driver = nv.nvmlSystemGetDriverVersion()
            info.uuid = nv.nvmlDeviceGetUUID(h)
            info.clocks_max = {
                "sm_mhz": nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM),
                "mem_mhz": nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM),
            }
        except Exception:
            pass
    return info


def clocks_now() -> dict[str, Any]:
    """SM and memory clocks (MHz), temperature (C), power (W) and throttle reasons now.

    Empty where NVML is unavailable. Reads only: never changes a clock.
    """
    try:
        import torch

        idx = torch.cuda.current_device() if torch.cuda.is_available() else 0
    except ImportError:
        idx = 0
    nv, h = _nvml_handle(idx)
    if h is None:
        return {}
    out: dict[str, Any] = {}
    try:
        out["sm_mhz"] = nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)
        out["mem_mhz"] = nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)
        out["temp_c"] = nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)
        out["power_w"] = nv.nvmlDeviceGetPowerUsage(h) / 1000.0
        out["throttle_reasons"] = int(nv.nvmlDeviceGetCurrentClocksEventReasons(h))
    except Exception:
        pass
    return out


def require_runs_on(
    kernel: str,
    targets: tuple[str, ...],
    device: DeviceInfo | None,
    peer: tuple[str, ...] = (),
    static_hint: bool = True,
) -> None:
    """Raise :class:`ArchMismatch` unless one of ``targets`` runs on ``device``.

    ``targets`` empty means a peer: it runs on one of the SMs ``peer`` names, or on any CUDA
    GPU when that is empty too (torch). ``static_hint`` False leaves out the pointer to
    ``--prof_type=static`` (for callers that run the static analysis themselves).

    Raises:
        ArchMismatch: no GPU, or none of the targets (or the peer's SMs) runs on its SM; the
            message names the SM the kernel needs and, for our builds, the static-analysis
            alternative.
    """
    if device is None:
        need = " or ".join(describe_sm(t) for t in targets or peer) or "a CUDA GPU"
        hint = (
            " (use --prof_type=static to compile and analyse it without one)"
            if targets and static_hint
            else ""
        )
        raise ArchMismatch(f"{kernel}: no CUDA GPU here; it needs {need} to run{hint}")
    sms = targets or peer
    if sms and not any(runs_on(t, device.sm) for t in sms):
        need = " or ".join(describe_sm(t) for t in sms)
        what = (
            f"{kernel} targets {need}" if targets else f"{kernel} (a peer library) runs on {need}"
        )
        hint = (
            " (use --prof_type=static to compile and analyse it for its own SM)"
            if targets and static_hint
            else ""
        )
        raise ArchMismatch(f"{what}; this device is {device.name} ({device.sm}): not run{hint}")


def require_plan_runs_on(plan, device: DeviceInfo | None, static_hint: bool = True) -> None:
    """:func:`require_runs_on` for a :class:`~kernelplan.plan.KernelPlan` (class or instance):
    its ``target_sm``, or for a peer its ``peer_sm``."""
    require_runs_on(plan.name, plan.target_sm, device, getattr(plan, "peer_sm", ()), static_hint)


def gpu_has_capability(major: int, minor: int, index: int = 0) -> bool:
    """Whether GPU ``index`` has compute capability (major, minor), asked of NVML (no torch
    import, no CUDA context); False where NVML or a GPU is absent."""
    nv, h = _nvml_handle(index)
    if h is None:
        return False
    try:
        return tuple(nv.nvmlDeviceGetCudaComputeCapability(h)) == (major, minor)
    except Exception:
        return False


#: SM count of the usual part for each target (A100 SXM, H100 SXM/H200, B200/B300, RTX 5090):
#: what a compile without that GPU assumes where a kernel bakes in ``max_active_clusters``.
SM_COUNTS = {"sm_80": 108, "sm_90a": 132, "sm_100a": 148, "sm_103a": 148, "sm_120a": 170}


@dataclass(frozen=True)
class Target:
    """What a kernel is compiled for: the SM (``"sm_90a"``) and the SM count a persistent
    kernel sizes its grid for, with where that count came from.

    Build it with :meth:`resolve`; constructing one validates it.

    Raises:
        KernelPlanError: an SM name nvcc does not use, or an SM count that is not a positive
            integer (``--sm_count``).
    """

    sm: str
    sm_count: int
    sm_count_from: str = "table"

    def __post_init__(self) -> None:
        parse_sm(self.sm)
        n = self.sm_count
        if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
            raise KernelPlanError(f"--sm_count must be a positive integer (got {n!r})")

    @classmethod
    def resolve(cls, sm: str, sm_count: Any = None) -> Target:
        """The target for ``sm``: ``sm_count`` when given (a positive integer, or its
        decimal string), else the GPU's own count when one of that SM is present, else
        :data:`SM_COUNTS` (132 where the SM is not listed)."""
        if sm_count is not None:
            if isinstance(sm_count, str):
                if not sm_count.strip().isdigit():
                    raise KernelPlanError(
                        f"--sm_count must be a positive integer (got {sm_count!r})"
                    )
                sm_count = int(sm_count)
            return cls(sm, sm_count, "--sm_count")
        num, _ = parse_sm(sm)
        if gpu_has_capability(num // 10, num % 10):
            try:
                import torch

                count = torch.cuda.get_device_properties(0).multi_processor_count
                return cls(sm, int(count), "this GPU")
            except Exception:
                pass
        return cls(sm, SM_COUNTS.get(sm, 132), "table")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def max_active_clusters(cluster_size: int, target: Target) -> tuple[int, str]:
    """The ``max_active_clusters`` a persistent CuTe DSL kernel bakes in as a Constexpr.

    On a GPU of the target's own SM whose count was not overridden: ``cutlass.utils.
    HardwareInfo().get_max_active_clusters(cluster_size)``, as the CUTLASS examples' ``run()``
    does (after making sure torch's CUDA context exists: HardwareInfo asks the driver in the
    current context). Anywhere else the kernel cannot run and the number only shapes the
    compiled code: ``target.sm_count // cluster_size``, at least 1.

    Returns:
        (max_active_clusters, where the number came from).
    """
    if target.sm_count_from == "this GPU":
        import cutlass.utils
        import torch

        torch.ones(1, device="cuda")  # the primary context HardwareInfo needs
        n = cutlass.utils.HardwareInfo().get_max_active_clusters(cluster_size)
        return int(n), f"cutlass.utils.HardwareInfo on this {target.sm} GPU"
    sms = target.sm_count
    return max(1, sms // cluster_size), (
        f"{sms} SMs ({target.sm_count_from}) / cluster size {cluster_size}"
    )
