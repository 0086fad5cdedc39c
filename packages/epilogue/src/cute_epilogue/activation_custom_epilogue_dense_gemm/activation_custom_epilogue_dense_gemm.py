"""Adapter: the CUTLASS Blackwell persistent GEMM with an activation in its EFC epilogue,
``cute/blackwell/efc/activation_custom_epilogue_dense_gemm.py`` (class ``DenseGemmActivation``
on the shared ``DenseGemmEFC`` of ``common_dense_gemm_efc.py``), beside
:mod:`cute_epilogue.custom_epilogue_dense_gemm`.

An implementation of the GEMM workload with a fused epilogue (upstream's epilogue function,
``create_epilogue_function``, L444-L483, after the Ada FP8 GEMM epilogue)::

    Aux = (alpha * scale_a * scale_b) * (A @ B) + (beta * scale_c) * C + bias
    D   = activation(Aux)

- Operands: A, B as the workload's; C (M, N, L) an input, Aux and D (M, N, L) the outputs,
  all N-major in one ``c_dtype`` (upstream lets each differ; its defaults are all Float32).
- Scalars and the activation: fields of :class:`ActivationGemmProblem` (upstream's CLI
  defaults, ``CLIParser.more_parsing`` L190-L243: relu, alpha = beta = 1, bias 0, the three
  scales 1, leaky_relu slope 0.01).
- The activations are EFC's own (``common_efc.py`` ``ACTIVATION_FUNCTIONS``, L64-L73); the
  reference uses their textbook definitions as upstream's docstring lists them (L75-L82) in
  PyTorch (gelu the erf form).

How the entry is reached: as for the custom epilogue (its module docstring): the epilogue
function is upstream's own, importable here (``create_epilogue_function(activation)``), EFC's
parameter analysis runs on fake tensors, and :class:`~kernelplan.CuteKernel` compiles
``gemm(a, b, max_active_clusters, stream, packed)``; the activation is a compile-time choice
(in the compile key through the problem), the scalars run-time values.

Target SM: sm_100a (tcgen05, TMEM, TMA in ``common_dense_gemm_efc.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from kernelplan import ShapeError, TensorSpec
from kernelplan import dtypes as dt
from kernelplan.workloads.gemm import GemmProblem

from ..custom_epilogue_dense_gemm.custom_epilogue_dense_gemm import (
    AB_DTYPES,
    EPI_TENSOR_DTYPES,
    EfcGemmPlan,
    EpilogueGemmConfig,
)

#: EFC's activations (``common_efc.py`` L64-L73)
ACTIVATIONS = ("identity", "relu", "leaky_relu", "tanh", "sigmoid", "silu", "hardswish", "gelu")
SCALARS = ("alpha", "beta", "bias", "scale_a", "scale_b", "scale_c", "leaky_relu_alpha")
#: the supplemental arguments in the epilogue's parameter order (L454-L466); tensors by name
SUPPLEMENTAL = (
    "c",
    "aux",
    "alpha",
    "beta",
    "bias",
    "scale_a",
    "scale_b",
    "scale_c",
    "d",
    "leaky_relu_alpha",
)


@dataclass(frozen=True)
class ActivationGemmProblem(GemmProblem):
    """The GEMM problem plus the epilogue's scalars and activation (upstream's defaults).
    ``dtype`` is A's and B's type, ``c_dtype`` that of C, Aux and D.

    Args:
        activation: one of EFC's activations.
        alpha: scales the accumulator (with scale_a and scale_b).
        beta: scales C (with scale_c).
        bias: added to Aux.
        scale_a: A's scale.
        scale_b: B's scale.
        scale_c: C's scale.
        leaky_relu_alpha: leaky_relu's negative slope.
    """

    m: int = 256
    n: int = 256
    k: int = 512
    dtype: str = "tfloat32"
    c_dtype: str | None = "float32"
    init: str = "randint"
    activation: str = "relu"
    alpha: float = 1.0
    beta: float = 1.0
    bias: float = 0.0
    scale_a: float = 1.0
    scale_b: float = 1.0
    scale_c: float = 1.0
    leaky_relu_alpha: float = 0.01

    def validate(self) -> None:
        super().validate()
        if self.activation not in ACTIVATIONS:
            raise ShapeError(f"--activation {self.activation}: one of {', '.join(ACTIVATIONS)}")
        for key in SCALARS:
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ShapeError(f"--{key} must be a number (got {v!r})")
            object.__setattr__(self, key, float(v))


UPSTREAM_DEFAULT = ActivationGemmProblem()


def activate(name: str, x, slope: float):
    """The activation in PyTorch, as upstream's docstring defines each (L75-L82)."""
    import torch
    import torch.nn.functional as F

    return {
        "identity": lambda: x,
        "relu": lambda: torch.relu(x),
        "leaky_relu": lambda: F.leaky_relu(x, slope),
        "tanh": lambda: torch.tanh(x),
        "sigmoid": lambda: torch.sigmoid(x),
        "silu": lambda: F.silu(x),
        "hardswish": lambda: F.hardswish(x),
        "gelu": lambda: F.gelu(x),
    }[name]()


class ActivationCustomEpilogueDenseGemm(EfcGemmPlan):
    """Blackwell persistent GEMM with the EFC epilogue Aux = a*AB + b*C + bias,
    D = activation(Aux); sm_100a."""

    name: ClassVar[str] = "activation_custom_epilogue_dense_gemm"
    problem_type = ActivationGemmProblem
    source: ClassVar[str] = "cute/blackwell/efc/activation_custom_epilogue_dense_gemm.py"
    supplemental = SUPPLEMENTAL
    scalar_names = SCALARS
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL Blackwell GEMM with an activation in its EFC epilogue, sm_100a"
    )

    def supports(self, problem: GemmProblem) -> None:
        if problem.dtype not in AB_DTYPES:
            raise ShapeError(f"{self.name} takes --dtype {', '.join(AB_DTYPES)}")
        if problem.c_dtype not in EPI_TENSOR_DTYPES:
            raise ShapeError(f"{self.name} takes --c_dtype {', '.join(EPI_TENSOR_DTYPES)}")

    def default_problem(self) -> ActivationGemmProblem:
        return UPSTREAM_DEFAULT

    def check_problems(self) -> list[ActivationGemmProblem]:
        """The defaults (relu); gelu and leaky_relu off the tile, batched, with every scalar
        at work."""
        odd = dict(m=200, n=136, k=260, l=2, beta=0.5, bias=0.25, scale_a=2.0, scale_c=-1.0)
        return [
            UPSTREAM_DEFAULT,
            UPSTREAM_DEFAULT.replace(activation="gelu", **odd),
            UPSTREAM_DEFAULT.replace(
                activation="leaky_relu", dtype="float16", c_dtype="float16", **odd
            ),
        ]

    def profile_problems(self) -> list[ActivationGemmProblem]:
        """Upstream's usage line: 8192^3 fp16, relu."""
        return [
            UPSTREAM_DEFAULT.replace(m=8192, n=8192, k=8192, dtype="float16", c_dtype="float16")
        ]

    def autotune_configs(self, problem) -> list[EpilogueGemmConfig]:
        base = EpilogueGemmConfig()
        return [base, base.replace(cluster_shape_mn=(2, 1), use_2cta_instrs=True)]

    def tensor_specs(self, problem: ActivationGemmProblem) -> dict[str, TensorSpec]:
        """A, B (the element TFloat32 where ``dtype`` is tfloat32), C input, Aux and D
        outputs (L, M, N) N-major in ``c_dtype``; dynamic, 16-byte aligned (upstream's
        ``cute_tensor_like(..., is_dynamic_layout=True, assumed_align=16)``)."""
        p = problem
        scale = 2.0 if p.init == "randint" else 1.0

        def spec(rows, cols, dtype, *, output):
            storage = dt.storage_of(dtype)
            return TensorSpec(
                (p.l, rows, cols),
                storage,
                perm=(1, 2, 0),
                role="output" if output else "input",
                init="empty" if output else p.init,
                scale=scale,
                leading_dim=1,
                element=dt.dtype(dtype).cute if storage != dtype else None,
            )

        return {
            "a": spec(p.m, p.k, p.dtype, output=False),
            "b": spec(p.n, p.k, p.dtype, output=False),
            "c": spec(p.m, p.n, p.c_dtype, output=False),
            "aux": spec(p.m, p.n, p.c_dtype, output=True),
            "d": spec(p.m, p.n, p.c_dtype, output=True),
        }

    def reference(self, problem: ActivationGemmProblem, inputs: Mapping[str, Any]):
        """Aux and D in float32 from the workload's fp32 ``A @ B^T``."""
        p = problem
        acc = self.workload.reference(p, inputs)["c"]
        aux = (
            (p.alpha * p.scale_a * p.scale_b) * acc
            + (p.beta * p.scale_c) * inputs["c"].float()
            + p.bias
        )
        return {"aux": aux, "d": activate(p.activation, aux, p.leaky_relu_alpha)}

    def flops_bytes(self, problem: ActivationGemmProblem) -> tuple[float, float]:
        """2*M*N*K*L plus 5 per output element (two scalings, two adds, the activation as
        one); A, B, C read once, Aux and D written once."""
        p = problem
        nbytes = float(sum(s.nbytes() for s in self.tensor_specs(p).values()))
        return 2.0 * p.m * p.n * p.k * p.l + 5.0 * p.m * p.n * p.l, nbytes

    def build(self, mod: Any, problem: ActivationGemmProblem, config: EpilogueGemmConfig) -> Any:
        """``DenseGemmActivation`` with upstream's epilogue function for the activation (its
        ``check_implementable`` is L618, made by :meth:`EfcGemmPlan.plan`)."""
        import cutlass

        return mod.DenseGemmActivation(
            cutlass.dtype(config.acc_dtype),
            cutlass.dtype(config.epi_dtype),
            config.use_2cta_instrs,
            config.mma_tiler_mn,
            config.cluster_shape_mn,
            mod.create_epilogue_function(problem.activation),
            problem.activation,
        )


__all__ = ["ActivationCustomEpilogueDenseGemm", "ActivationGemmProblem"]
