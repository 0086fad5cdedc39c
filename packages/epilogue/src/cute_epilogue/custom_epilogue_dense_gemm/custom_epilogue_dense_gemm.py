"""Adapter: the CUTLASS Blackwell persistent GEMM with a custom fused epilogue written through
EFC (Epilogue Fusion Configuration), ``cute/blackwell/efc/custom_epilogue_dense_gemm.py``.

An implementation of the GEMM workload (:data:`kernelplan.workloads.gemm.GEMM`) with a fused
epilogue on top (upstream ``run()``, L363-L560)::

    Y = A @ B                                          (the accumulator, stored as is)
    D = relu(alpha * (A @ B) + beta * C) + x_factor * X

What it takes beyond the workload is stated here, not in a workload of its own:

- Operands: A (M, K, L), B (N, K, L) as in the workload; C and X (M, N, L) are extra inputs,
  D and Y (M, N, L) the outputs (the workload's ``c`` is renamed: here C is an input).
  :meth:`CustomEpilogueDenseGemm.tensor_specs` and ``reference`` state them.
- Scalars ``alpha``, ``beta``, ``x_factor``: fields of :class:`EpilogueGemmProblem`, the
  workload's :class:`~kernelplan.workloads.gemm.GemmProblem` extended by this implementation
  (upstream's CLI defaults 1.0, 0.0, 3.0).
- Majors: the workload's TN only (A and B K-major, C/D/X/Y N-major); upstream also takes
  M-major A, N-major B and M-major C/D, not carried here.
- Dtypes: ``dtype`` (A and B) tfloat32 (stored as float32, the CuTe element type set to
  TFloat32 as upstream's ``cute_tensor_like`` does), float16 or bfloat16; ``c_dtype`` is the
  type of C, D, X and Y together (float32, float16 or bfloat16; upstream lets each differ, and
  takes int8/fp8 A/B through a conversion kernel: not carried).

The module docstring upstream says ``D = (A*B)*alpha + C*beta + X*x_factor``; the epilogue it
compiles (L450-L459) also applies ``efc_config.relu`` to the first two terms, and that is what
the reference here computes. Records written before the port state the problem in the
example's own terms (``ab_dtype``, ``d_dtype``, majors, ...): :meth:`CustomEpilogueDenseGemm.
problem` reads those too, so they can be rebuilt.

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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from cute_gemm.blackwell_common import Sm100GemmPlan

from kernelplan import Config, CuteKernel, ShapeError, Target, TensorSpec
from kernelplan import dtypes as dt
from kernelplan.cutlass_src import load_example
from kernelplan.workload import Problem
from kernelplan.workloads.gemm import GemmProblem

#: Upstream's compile options (L529).
OPTIONS = "--opt-level=3 --enable-assertions --generate-line-info"
#: A/B types this adapter takes (torch spelling; tfloat32 is stored as float32).
AB_DTYPES = ("tfloat32", "float16", "bfloat16")
#: Types of C, D, X and Y (one ``c_dtype`` for the four).
EPI_TENSOR_DTYPES = ("float32", "float16", "bfloat16")
#: CuTe DSL spelling of the config's accumulator / epilogue types.
ACC_DTYPES = ("Float32", "Float16")


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
class EpilogueGemmProblem(GemmProblem):
    """The GEMM problem plus the epilogue's scalars (upstream's CLI defaults). ``dtype`` is
    A's and B's type, ``c_dtype`` that of C, D, X and Y (see the module docstring).

    Args:
        alpha: scales the accumulator in D.
        beta: scales C in D.
        x_factor: scales X in D.
    """

    alpha: float = 1.0
    beta: float = 0.0
    x_factor: float = 3.0

    def validate(self) -> None:
        super().validate()
        for key in ("alpha", "beta", "x_factor"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ShapeError(f"--{key} must be a number (got {v!r})")
            object.__setattr__(self, key, float(v))


#: The example's CLI defaults (``DenseGemmEFC.CLIParser``, ``common_dense_gemm_efc.py``
#: L1726-L1790, and ``DenseGemmAlphaBeta.CLIParser`` L140-L170); integer inputs, as
#: upstream's ``cutlass.torch.matrix`` draws them.
UPSTREAM_DEFAULT = EpilogueGemmProblem(
    256, 256, 512, 1, dtype="tfloat32", c_dtype="float32", init="randint"
)


#: The problem keys of records written before the port (the example's own CLI) -> dtypes here.
_LEGACY_DTYPES = {"TFloat32": "tfloat32", "Float32": "float32", "Float16": "float16",
                  "BFloat16": "bfloat16"}  # fmt: skip


def _from_legacy(values: dict[str, Any]) -> dict[str, Any]:
    """A problem as records written before the port state it (``ab_dtype``, ``c_dtype`` ..
    ``y_dtype`` in DSL spelling, ``a_major``/``b_major``/``cd_major``; integer inputs always)
    in this implementation's fields; other mappings pass unchanged.

    Raises:
        ShapeError: majors other than the workload's TN, or C/D/X/Y of different types.
    """
    if "ab_dtype" not in values:
        return values
    v = dict(values)
    majors = tuple(v.pop(k, d) for k, d in (("a_major", "k"), ("b_major", "k"), ("cd_major", "n")))
    if majors != ("k", "k", "n"):
        raise ShapeError(f"majors {majors}: this implementation takes the GEMM workload's TN only")
    epi = {v.pop(f"{t}_dtype", v.get("c_dtype")) for t in ("d", "x", "y")} | {v["c_dtype"]}
    if len(epi) != 1:
        raise ShapeError(f"C, D, X and Y of different types ({sorted(epi)}): one c_dtype here")
    v["dtype"] = _LEGACY_DTYPES.get(v.pop("ab_dtype"), "?")
    v["c_dtype"] = _LEGACY_DTYPES.get(v["c_dtype"], v["c_dtype"])
    v.setdefault("init", "randint")
    return v


@dataclass(frozen=True)
class EpilogueGemmConfig(Config):
    """The example's implementation flags (upstream CLI defaults): MMA tile (M, N), cluster
    (M, N), the 2-CTA MMA, and the accumulator and epilogue math types (DSL spelling).

    Raises:
        ShapeError: a shape that is not two positive integers or an unknown type; what
            upstream rejects beyond that is refused by ``plan()`` with upstream's message.
    """

    mma_tiler_mn: tuple[int, int] = (128, 128)
    cluster_shape_mn: tuple[int, int] = (1, 1)
    use_2cta_instrs: bool = False
    acc_dtype: str = "Float32"
    epi_dtype: str = "Float32"

    def validate(self) -> None:
        for key in ("mma_tiler_mn", "cluster_shape_mn"):
            v = getattr(self, key)
            if len(v) != 2 or any(not isinstance(i, int) or i <= 0 for i in v):
                raise ShapeError(f"{key} must be two positive integers (got {v})")
        for key in ("acc_dtype", "epi_dtype"):
            if getattr(self, key) not in ACC_DTYPES:
                raise ShapeError(f"{key} {getattr(self, key)}: one of {', '.join(ACC_DTYPES)}")


class EfcGemmPlan(Sm100GemmPlan):
    """What the EFC epilogue GEMMs share (upstream's ``DenseGemmEFC`` subclasses, built by
    :meth:`build`): the config, the check of the problem upstream's ``check_implementable``
    makes, EFC's parameter analysis, the launch ``gemm(a, b, max_active_clusters, stream,
    packed)`` with the supplemental arguments packed in ``supplemental`` order (tensors by
    name, the problem's ``scalar_names`` by value), and the low-precision reference (every
    output rounded once to ``c_dtype``)."""

    package: ClassVar[str] = "epilogue"
    config_type: ClassVar[type[Config]] = EpilogueGemmConfig
    supplemental: ClassVar[tuple[str, ...]]
    scalar_names: ClassVar[tuple[str, ...]]

    def epilogue_problem(self, problem: GemmProblem) -> GemmProblem:
        """The problem with the epilogue's fields (as given, unless a subclass fills them)."""
        return problem

    def build(self, mod: Any, problem: GemmProblem, config: EpilogueGemmConfig) -> Any:
        """Upstream's GEMM object (a ``DenseGemmEFC``) from the example module ``mod``."""
        raise NotImplementedError

    def reference_lowp(self, problem: GemmProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The reference, each output rounded once to ``c_dtype``."""
        import torch

        to = getattr(torch, dt.storage_of(problem.c_dtype))
        return {n: t.to(to).float() for n, t in self.reference(problem, inputs).items()}

    def plan(self, problem: GemmProblem, config: EpilogueGemmConfig, target: Target) -> CuteKernel:
        p = self.epilogue_problem(problem)
        gemm = self.build(load_example(self.source), p, config)
        # Upstream's check_implementable, on the problem's numbers rather than on tensors (it
        # reads their shapes, which fake tensors leave symbolic).
        ab = dt.cute_type(p.dtype)
        try:
            gemm.check_valid_dtypes(ab)
            gemm.check_valid_mma_tiler_and_cluster_shape()
            gemm.check_valid_tensor_alignment(
                p.m, p.n, p.k, p.l, ab, dt.cute_type(p.c_dtype), "k", "k", "n"
            )
        except ValueError as e:
            raise ShapeError(f"{self.name}: {e}") from None
        specs = self.tensor_specs(p)
        scalars = {k: getattr(p, k) for k in self.scalar_names}

        def supplemental(t: Mapping[str, Any]) -> tuple:
            return tuple(t[a] if a in t else scalars[a] for a in self.supplemental)

        # Step 1 of gemm.compile: the EFC parameter analysis (plain Python).
        gemm.efc.compile(supplemental({n: s.to_fake_cute() for n, s in specs.items()}))
        return self.persistent(
            p,
            gemm,
            lambda t: (t["a"], t["b"]),
            config.cluster_shape_mn,
            target,
            trail=lambda t: (supplemental(t),),
            specs=specs,
            options=OPTIONS,
        )


class CustomEpilogueDenseGemm(EfcGemmPlan):
    """Blackwell persistent GEMM (tcgen05, TMA, warp-specialised) with the EFC epilogue
    Y = A@B, D = relu(alpha*A@B + beta*C) + x_factor*X; sm_100a. An implementation of the
    GEMM workload on :class:`EpilogueGemmProblem` (see the module docstring)."""

    name: ClassVar[str] = "custom_epilogue_dense_gemm"
    source: ClassVar[str] = "cute/blackwell/efc/custom_epilogue_dense_gemm.py"
    # sm_100a: tcgen05 / TMEM / TMA, all in the sibling common_dense_gemm_efc.py (see the
    # docstring). Dynamic-layout tensors: one compile serves every M, N, K, L. The scalars
    # reach ``cute.compile`` as Python floats inside the packed tuple and compile to run-time
    # arguments (the cubin is the same for other values); they stay in the compile key all
    # the same, which costs a compile per value and can never launch stale constants.
    supplemental = SUPPLEMENTAL
    scalar_names: ClassVar[tuple[str, ...]] = ("alpha", "beta", "x_factor")
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL Blackwell GEMM with an EFC custom epilogue (D, Y), sm_100a"
    )

    # -- the problem: the workload's plus the epilogue's scalars ------------------------------
    def problem(self, value: Problem | Mapping[str, Any] | None = None, **kw: Any):
        """An :class:`EpilogueGemmProblem` from a problem (a workload's GemmProblem gets the
        default scalars), a mapping or keywords; checked by :meth:`supports`.

        Raises:
            ShapeError: unknown keys, or a problem this implementation does not take.
        """
        values = value.to_dict() if isinstance(value, Problem) else dict(value or {})
        p = EpilogueGemmProblem.from_dict(_from_legacy({**values, **kw}))
        self.supports(p)
        return p

    def epilogue_problem(self, problem: GemmProblem) -> EpilogueGemmProblem:
        return self._epi(problem)

    @staticmethod
    def _epi(problem: GemmProblem) -> EpilogueGemmProblem:
        if isinstance(problem, EpilogueGemmProblem):
            return problem
        return EpilogueGemmProblem.from_dict(problem.to_dict())

    def supports(self, problem: GemmProblem) -> None:
        """Raises ShapeError for an A/B or C/D/X/Y type it does not take (the alignment rules
        are upstream's, checked in ``plan``)."""
        if problem.dtype not in AB_DTYPES:
            raise ShapeError(
                f"{self.name} takes --dtype {', '.join(AB_DTYPES)} (got {problem.dtype})"
            )
        if problem.c_dtype not in EPI_TENSOR_DTYPES:
            raise ShapeError(
                f"{self.name} takes --c_dtype {', '.join(EPI_TENSOR_DTYPES)} (C, D, X and Y; "
                f"got {problem.c_dtype})"
            )

    def default_problem(self) -> EpilogueGemmProblem:
        return UPSTREAM_DEFAULT

    def check_problems(self) -> list[EpilogueGemmProblem]:
        """The example's defaults; then M, N, K that are not multiples of the 128x128 tile
        nor of K's tile, batched (L=2), with beta and x_factor both at work (upstream's
        default beta=0 would let a wrong C read pass)."""
        odd = dict(m=200, n=136, k=260, l=2, beta=0.5, x_factor=-1.5)
        return [UPSTREAM_DEFAULT, UPSTREAM_DEFAULT.replace(**odd)]

    def profile_problems(self) -> list[EpilogueGemmProblem]:
        """The defaults and the size of upstream's usage example (8192^3)."""
        return [UPSTREAM_DEFAULT, UPSTREAM_DEFAULT.replace(m=8192, n=8192, k=8192)]

    # -- configs ---------------------------------------------------------------------------
    def autotune_configs(self, problem: GemmProblem) -> list[EpilogueGemmConfig]:
        """The CLI default, then 2-CTA MMA pairs (cluster M = 2), as upstream's usage line
        (128x128, cluster 2x1, --use_2cta_instrs)."""
        base = EpilogueGemmConfig()
        out = [base]
        for tiler, cluster in (((128, 256), (1, 1)), ((128, 128), (2, 1)), ((256, 128), (2, 1))):
            out.append(
                base.replace(
                    mma_tiler_mn=tiler, cluster_shape_mn=cluster, use_2cta_instrs=cluster[0] == 2
                )
            )
        return out

    # -- the tensors and the reference beyond the workload's ------------------------------------
    def tensor_specs(self, problem: GemmProblem) -> dict[str, TensorSpec]:
        """The workload's A and B (the element type TFloat32 where ``dtype`` is tfloat32);
        C and X inputs, D and Y outputs, all (M, N, L) N-major views of (L, M, N) storage in
        ``c_dtype``. Dynamic layouts, 16-byte alignment (upstream's ``cute_tensor_like(...,
        is_dynamic_layout=True, assumed_align=16)``); inputs are integers in [-2, 2] with
        ``init="randint"`` (upstream's ``matrix``)."""
        p = self._epi(problem)
        scale = 2.0 if p.init == "randint" else 1.0

        def spec(rows: int, cols: int, dtype: str, *, output: bool) -> TensorSpec:
            storage = dt.storage_of(dtype)
            return TensorSpec(
                (p.l, rows, cols),
                storage,
                perm=(1, 2, 0),
                role="output" if output else "input",
                init="empty" if output else p.init,
                scale=scale,
                leading_dim=1,
                align=16,
                element=dt.dtype(dtype).cute if storage != dtype else None,
            )

        specs = {
            "a": spec(p.m, p.k, p.dtype, output=False),
            "b": spec(p.n, p.k, p.dtype, output=False),
        }
        for t in ("c", "d", "x", "y"):
            specs[t] = spec(p.m, p.n, p.c_dtype, output=t in ("d", "y"))
        return specs

    def reference(self, problem: GemmProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """Y: the workload's fp32 ``A @ B^T`` (upstream's ``einsum("mkl,nkl->mnl")``); D: the
        epilogue through PyTorch in fp32; both in their (L, M, N) storage layout."""
        import torch

        p = self._epi(problem)
        acc = self.workload.reference(p, inputs)["c"]
        c, x = inputs["c"].float(), inputs["x"].float()
        d = torch.relu(acc * p.alpha + c * p.beta) + x * p.x_factor
        return {"d": d, "y": acc}

    def flops_bytes(self, problem: GemmProblem) -> tuple[float, float]:
        """2*M*N*K*L for the GEMM plus 6 per output element for the epilogue (two scalings,
        relu, the X scaling, two adds); A, B, C, X read once, D, Y written once."""
        p = problem
        nbytes = float(sum(s.nbytes() for s in self.tensor_specs(p).values()))
        return 2.0 * p.m * p.n * p.k * p.l + 6.0 * p.m * p.n * p.l, nbytes

    # -- how the upstream entry point is reached (the rest: EfcGemmPlan.plan) ----------------
    def build(self, mod: Any, problem: EpilogueGemmProblem, config: EpilogueGemmConfig) -> Any:
        """``DenseGemmAlphaBeta`` with :func:`epilogue` (upstream L474; its
        ``check_implementable``, L507, is made by :meth:`EfcGemmPlan.plan`)."""
        import cutlass

        return mod.DenseGemmAlphaBeta(
            cutlass.dtype(config.acc_dtype),
            cutlass.dtype(config.epi_dtype),
            config.use_2cta_instrs,
            config.mma_tiler_mn,
            config.cluster_shape_mn,
            epilogue,
        )


__all__ = ["CustomEpilogueDenseGemm", "EfcGemmPlan", "EpilogueGemmConfig", "EpilogueGemmProblem"]
