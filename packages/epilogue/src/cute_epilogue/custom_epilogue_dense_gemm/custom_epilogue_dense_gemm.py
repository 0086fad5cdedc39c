"""Adapter: the CUTLASS Blackwell persistent GEMM with a custom fused epilogue written through
EFC (Epilogue Fusion Configuration), ``cute/blackwell/efc/custom_epilogue_dense_gemm.py``.

Workload (upstream ``run()``, L363-L560)::

    Y = A @ B                                          (the accumulator, stored as is)
    D = relu(alpha * (A @ B) + beta * C) + x_factor * X

A (M, K, L), B (N, K, L), C/D/X/Y (M, N, L). The module docstring upstream says
``D = (A*B)*alpha + C*beta + X*x_factor``; the epilogue it compiles (L450-L459) also applies
``efc_config.relu`` to the first two terms, and that is what the reference here computes.

How the entry is reached. Upstream builds ``DenseGemmAlphaBeta(acc_dtype, epi_dtype,
use_2cta_instrs, mma_tiler_mn, cluster_shape_mn, epilogue)`` (L474) and compiles through its
own ``gemm.compile(a, b, max_active_clusters, stream, *supplemental, options=...)``
(``common_dense_gemm_efc.py`` L1962-L2011), which is two steps:

1. ``gemm.efc.compile(supplemental)``: plain Python; runs the epilogue function once with
   proxies to learn which parameters are tensors, which are read and which are written;
2. ``cute.compile(gemm, a, b, max_active_clusters, stream, packed)`` where ``packed`` is the
   supplemental arguments as one tuple in the epilogue's parameter order (``pack_arguments``),
   and the compiled function is called as ``(a, b, stream, packed)``.

So :meth:`CustomEpilogueDenseGemm.plan` does step 1 itself (with fake tensors: only their
being tensors matters) and hands the harness an ordinary :class:`~kernelplan.CuteKernel` for
step 2, whose argument tuple carries the packed tuple. ``gemm.compile`` is never called, and no
core change is needed; the compile-only route is the object's ``@cute.jit __call__`` with fake
tensors, as for any other kernel object.

The epilogue function is a local of upstream ``run()`` (not importable), so :func:`epilogue`
restates it; ``tests/test_custom_epilogue_dense_gemm.py`` checks that its body is the same
code as upstream's (AST comparison), so a change in the pinned source is caught.

Target SM: sm_100a (tcgen05 MMA, TMEM, TMA in ``common_dense_gemm_efc.py``). The scaffold
derived sm_80 because it reads only the example file, which holds no instruction of its own
(everything is in the base class ``DenseGemmEFC`` of the sibling module). It cannot run on the
H200; static analysis works anywhere.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from kernelplan import STREAM, CuteKernel, KernelPlan, ShapeError, TensorSpec
from kernelplan.cutlass_src import load_example
from kernelplan.device import max_active_clusters
from kernelplan.kernel import Const

#: The example's CLI defaults for the workload (``DenseGemmEFC.CLIParser``,
#: ``common_dense_gemm_efc.py`` L1726-L1790, and ``DenseGemmAlphaBeta.CLIParser`` L140-L170).
PROBLEM_DEFAULTS: dict[str, Any] = {
    "m": 256,
    "n": 256,
    "k": 512,
    "l": 1,
    "ab_dtype": "TFloat32",
    "c_dtype": "Float32",
    "d_dtype": "Float32",
    "x_dtype": "Float32",
    "y_dtype": "Float32",
    "alpha": 1.0,
    "beta": 0.0,
    "x_factor": 3.0,
    "a_major": "k",
    "b_major": "k",
    "cd_major": "n",
}
#: The example's CLI defaults for the implementation.
CONFIG_DEFAULTS: dict[str, Any] = {
    "mma_tiler_mn": [128, 128],
    "cluster_shape_mn": [1, 1],
    "use_2cta_instrs": False,
    "acc_dtype": "Float32",
    "epi_dtype": "Float32",
}
#: Upstream's compile options (L529).
OPTIONS = "--opt-level=3 --enable-assertions --generate-line-info"
#: A/B types this adapter stores (upstream also takes int8/uint8 and fp8, which it builds
#: through a conversion kernel; not carried here).
AB_DTYPES = ("TFloat32", "Float16", "BFloat16")
EPI_TENSOR_DTYPES = ("Float32", "Float16", "BFloat16")
#: torch storage of a CuTe DSL element type (TFloat32 is stored as float32).
STORAGE = {
    "TFloat32": "float32",
    "Float32": "float32",
    "Float16": "float16",
    "BFloat16": "bfloat16",
}


def epilogue(efc_config, C, D, alpha, beta, X, x_factor, Y):  # noqa: N803 - upstream's names
    """Upstream's epilogue (``run()``, L450-L459), restated: EFC takes the parameter names
    (after ``efc_config``) as the names of the supplemental arguments, in this order."""
    # All the .load() happen before any .store().
    # Store the accumulator to Y
    Y.store(efc_config.accum())
    # Compute the result with alpha, beta scaling and X factor
    result = efc_config.relu(efc_config.accum() * alpha + C.load() * beta) + X.load() * x_factor
    D.store(result)


#: The supplemental arguments in the epilogue's parameter order; tensors by spec name.
SUPPLEMENTAL = ("c", "d", "alpha", "beta", "x", "x_factor", "y")


@dataclass(frozen=True)
class ElementSpec(TensorSpec):
    """A :class:`~kernelplan.TensorSpec` whose CuTe element type differs from its torch
    storage type (TFloat32 stored as float32): upstream sets ``cute_tensor.element_type``
    after ``from_dlpack`` (``cutlass.torch.cute_tensor_like``)."""

    element: str | None = None

    def to_cute(self, storage):
        import cutlass

        t = super().to_cute(storage)
        if self.element:
            t.element_type = cutlass.dtype(self.element)
        return t

    def to_fake_cute(self):
        if not self.element:
            return super().to_fake_cute()
        import cutlass
        import cutlass.cute as cute
        from cutlass.cute.runtime import make_fake_tensor

        shape, stride = self.view_shape(), self.view_stride()
        if self.leading_dim is not None:
            shape = tuple(cute.sym_int() for _ in shape)
            stride = tuple(
                1 if i == self.leading_dim else cute.sym_int() for i in range(len(stride))
            )
        return make_fake_tensor(
            cutlass.dtype(self.element), shape, stride, assumed_align=self.align
        )


def _matrix_spec(
    l: int, mode0: int, mode1: int, mode0_major: bool, dtype: str, *, output: bool
) -> ElementSpec:
    """Storage and view as ``cutlass.torch.matrix`` lays them out: (L, mode1, mode0) seen as
    (mode0, mode1, L) when mode 0 is contiguous, else (L, mode0, mode1) seen as (mode0,
    mode1, L); dynamic layout with the contiguous mode as leading dimension, 16-byte
    alignment (``cute_tensor_like(..., is_dynamic_layout=True, assumed_align=16)``). Inputs
    are integers in [-2, 2], as upstream's ``matrix`` draws them."""
    shape = (l, mode1, mode0) if mode0_major else (l, mode0, mode1)
    perm = (2, 1, 0) if mode0_major else (1, 2, 0)
    return ElementSpec(
        shape,
        STORAGE[dtype],
        perm=perm,
        role="output" if output else "input",
        init="empty" if output else "randint",
        scale=2.0,
        leading_dim=0 if mode0_major else 1,
        align=16,
        element=dtype if STORAGE[dtype] != dtype.lower() else None,
    )


class CustomEpilogueDenseGemm(KernelPlan):
    """Blackwell persistent GEMM (tcgen05, TMA, warp-specialised) with the EFC epilogue
    Y = A@B, D = relu(alpha*A@B + beta*C) + x_factor*X; sm_100a."""

    name: ClassVar[str] = "custom_epilogue_dense_gemm"
    package: ClassVar[str] = "epilogue"
    source: ClassVar[str] = "cute/blackwell/efc/custom_epilogue_dense_gemm.py"
    # tcgen05 / TMEM / TMA, all in the sibling common_dense_gemm_efc.py (see the docstring).
    target_sm: ClassVar[tuple[str, ...]] = ("sm_100a",)
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL Blackwell GEMM with an EFC custom epilogue (D, Y), sm_100a"
    )

    # -- the workload: the example's own CLI -------------------------------------------------
    def add_problem_arguments(self, parser: argparse.ArgumentParser) -> None:
        d = PROBLEM_DEFAULTS
        g = parser.add_argument_group("problem (the example's CLI)")
        g.add_argument(
            "--mnkl",
            default=",".join(str(d[x]) for x in "mnkl"),
            help="M,N,K,L (comma-separated, as upstream)",
        )
        g.add_argument("--ab_dtype", default=d["ab_dtype"], choices=AB_DTYPES)
        for t in ("c", "d", "x", "y"):
            g.add_argument(f"--{t}_dtype", default=d[f"{t}_dtype"], choices=EPI_TENSOR_DTYPES)
        g.add_argument("--alpha", type=float, default=d["alpha"])
        g.add_argument("--beta", type=float, default=d["beta"])
        g.add_argument("--x_factor", type=float, default=d["x_factor"])
        g.add_argument("--a_major", choices=("k", "m"), default=d["a_major"])
        g.add_argument("--b_major", choices=("k", "n"), default=d["b_major"])
        g.add_argument("--cd_major", choices=("n", "m"), default=d["cd_major"])
        # Upstream flags that are configs here (--config key=value): mma_tiler_mn,
        # cluster_shape_mn, use_2cta_instrs, acc_dtype, epi_dtype. Left to the harness:
        # --tolerance (kernelplan.check's table), --warmup_iterations, --iterations,
        # --skip_ref_check.

    def problem_from_args(self, args: argparse.Namespace) -> dict[str, Any]:
        try:
            m, n, k, l = (int(v) for v in str(args.mnkl).split(","))
        except ValueError:
            raise ShapeError(
                f"--mnkl expects four comma-separated integers, got {args.mnkl}"
            ) from None
        problem = {**PROBLEM_DEFAULTS, "m": m, "n": n, "k": k, "l": l}
        for key in PROBLEM_DEFAULTS:
            if key not in "mnkl" and hasattr(args, key):
                problem[key] = getattr(args, key)
        self.validate(problem)
        return problem

    def validate(self, problem: Mapping[str, Any]) -> None:
        for x in "mnkl":
            if int(problem[x]) < 1:
                raise ShapeError(f"{self.name}: {x} must be >= 1, got {problem[x]}")
        if problem["ab_dtype"] not in AB_DTYPES:
            raise ShapeError(f"{self.name}: ab_dtype {problem['ab_dtype']} not in {AB_DTYPES}")
        for t in ("c", "d", "x", "y"):
            if problem[f"{t}_dtype"] not in EPI_TENSOR_DTYPES:
                raise ShapeError(f"{self.name}: {t}_dtype not in {EPI_TENSOR_DTYPES}")

    def check_problems(self) -> list[dict[str, Any]]:
        """The example's defaults; then M, N, K that are not multiples of the 128x128 tile
        nor of K's tile, batched (L=2), with beta and x_factor both at work (upstream's
        default beta=0 would let a wrong C read pass)."""
        odd = {"m": 200, "n": 136, "k": 260, "l": 2, "beta": 0.5, "x_factor": -1.5}
        return [dict(PROBLEM_DEFAULTS), {**PROBLEM_DEFAULTS, **odd}]

    def profile_problems(self) -> list[dict[str, Any]]:
        """The defaults and the size of upstream's usage example (8192^3)."""
        big = {"m": 8192, "n": 8192, "k": 8192}
        return [dict(PROBLEM_DEFAULTS), {**PROBLEM_DEFAULTS, **big}]

    def compute_dtype(self, problem: Mapping[str, Any]) -> str:
        ab = problem["ab_dtype"]
        return "tfloat32" if ab == "TFloat32" else STORAGE[ab]

    # -- configs ---------------------------------------------------------------------------
    def default_config(self, problem: Mapping[str, Any]) -> dict[str, Any]:
        return dict(CONFIG_DEFAULTS)

    def _autotune_configs(self, problem: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The CLI default, then 2-CTA MMA pairs (cluster M = 2), as upstream's usage line
        (128x128, cluster 2x1, --use_2cta_instrs)."""
        base = dict(CONFIG_DEFAULTS)
        out = [base]
        for tiler, cluster in (([128, 256], [1, 1]), ([128, 128], [2, 1]), ([256, 128], [2, 1])):
            out.append(
                {**base, "mma_tiler_mn": tiler, "cluster_shape_mn": cluster,
                 "use_2cta_instrs": cluster[0] == 2}
            )  # fmt: skip
        return out

    # -- the workload's definition ---------------------------------------------------------
    def tensor_specs(self, problem: Mapping[str, Any]) -> dict[str, TensorSpec]:
        m, n, k, l = (int(problem[x]) for x in "mnkl")
        cd_m = problem["cd_major"] == "m"
        specs = {
            "a": _matrix_spec(
                l, m, k, problem["a_major"] == "m", problem["ab_dtype"], output=False
            ),
            "b": _matrix_spec(
                l, n, k, problem["b_major"] == "n", problem["ab_dtype"], output=False
            ),
        }
        for t in ("c", "d", "x", "y"):
            dt = problem[f"{t}_dtype"]
            specs[t] = _matrix_spec(l, m, n, cd_m, dt, output=t in ("d", "y"))
        return specs

    def reference_fn(self, problem: Mapping[str, Any], inputs: Mapping[str, Any]) -> dict[str, Any]:
        """Upstream's reference (``evaluate_on_cpu``: ``einsum("mkl,nkl->mnl")`` in float32,
        then the epilogue through PyTorch), returned in the storage layouts."""
        import torch

        specs = self.tensor_specs(problem)
        view = {n: specs[n].kernel_view(inputs[n]).float() for n in ("a", "b", "c", "x")}
        acc = torch.einsum("mkl,nkl->mnl", view["a"], view["b"])
        alpha, beta, xf = (float(problem[s]) for s in ("alpha", "beta", "x_factor"))
        d = torch.relu(acc * alpha + view["c"] * beta) + view["x"] * xf
        inv = _inverse(specs["d"].perm)
        return {"d": d.permute(*inv), "y": acc.permute(*inv)}

    def _algorithmic_flops_bytes(self, problem: Mapping[str, Any]) -> tuple[float, float]:
        """2*M*N*K*L for the GEMM plus 6 per output element for the epilogue (two scalings,
        relu, the X scaling, two adds); A, B, C, X read once, D, Y written once."""
        m, n, k, l = (float(problem[x]) for x in "mnkl")
        specs = self.tensor_specs(problem)
        nbytes = float(sum(s.nbytes() for s in specs.values()))
        return 2.0 * m * n * k * l + 6.0 * m * n * l, nbytes

    # -- how the upstream entry point is reached --------------------------------------------
    def plan(self, problem: Mapping[str, Any], config: Mapping[str, Any]) -> CuteKernel:
        import cutlass

        cfg = {**CONFIG_DEFAULTS, **config}
        tiler = tuple(int(v) for v in cfg["mma_tiler_mn"])
        cluster = tuple(int(v) for v in cfg["cluster_shape_mn"])
        use_2cta = bool(cfg["use_2cta_instrs"])
        mod = load_example(self.source)
        gemm = mod.DenseGemmAlphaBeta(
            cutlass.dtype(cfg["acc_dtype"]),
            cutlass.dtype(cfg["epi_dtype"]),
            use_2cta,
            tiler,
            cluster,
            epilogue,
        )
        # Upstream's check_implementable (L507), on the problem's numbers rather than on
        # tensors (it reads their shapes, which fake tensors leave symbolic).
        try:
            gemm.check_valid_dtypes(cutlass.dtype(problem["ab_dtype"]))
            gemm.check_valid_mma_tiler_and_cluster_shape()
            gemm.check_valid_tensor_alignment(
                *(int(problem[x]) for x in "mnkl"),
                cutlass.dtype(problem["ab_dtype"]),
                cutlass.dtype(problem["d_dtype"]),
                problem["a_major"],
                problem["b_major"],
                problem["cd_major"],
            )
        except ValueError as e:
            raise ShapeError(f"{self.name}: {e}") from None
        specs = self.tensor_specs(problem)
        scalars = {s: float(problem[s]) for s in ("alpha", "beta", "x_factor")}

        def supplemental(t: Mapping[str, Any]) -> tuple:
            return tuple(t[a] if a in t else scalars[a] for a in SUPPLEMENTAL)

        # Step 1 of gemm.compile: the EFC parameter analysis (plain Python).
        gemm.efc.compile(supplemental({n: s.to_fake_cute() for n, s in specs.items()}))
        mac, sms, why = max_active_clusters(
            cluster[0] * cluster[1], cfg, target_sm=self.target_sm[0]
        )

        def args(t: Mapping[str, Any]) -> tuple:
            return (t["a"], t["b"], Const(mac), STREAM, supplemental(t))

        key = (self.name, json.dumps([problem, cfg, mac], sort_keys=True, default=str))
        meta = {"max_active_clusters": mac, "max_active_clusters_from": why, "sm_count": sms}
        return CuteKernel(self.name, gemm, args, specs, key=key, options=OPTIONS, meta=meta)


def _inverse(perm: tuple[int, ...] | None) -> tuple[int, ...]:
    if perm is None:
        return (0, 1, 2)
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)
