"""Adapter: class ``DenseGemmAlphaBeta`` (L124) of the CUTLASS CuTe DSL example
``cute/blackwell/efc/custom_epilogue_dense_gemm.py``.

Scaffolded by ``kernelplan.scaffold`` from the example's source, read with ``ast`` (never run).
Derived: the target SM (see ``target_sm``), the entry point and its signature, the constructor
parameters, the example's CLI defaults. Still to write: every method that raises
``NotImplementedError("TODO(scaffold): ...")``.

Upstream: chosen with --entry.

Constructor of ``DenseGemmAlphaBeta`` (L124)::

    (not in this file)

"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any, ClassVar

from kernelplan import CuteKernel, KernelPlan, TensorSpec

#: The example's CLI defaults for the workload (its argparse, from L140).
PROBLEM_DEFAULTS: dict[str, Any] = {
    "alpha": 1.0,
    "beta": 0.0,
    "c_dtype": "Float32",
    "d_dtype": "Float32",
    "x_dtype": "Float32",
    "x_factor": 3.0,
    "y_dtype": "Float32",
}
#: Config keys with no value in the example (plan() refuses while any is None).
REQUIRED: tuple[str, ...] = ()


class CustomEpilogueDenseGemm(KernelPlan):
    """DenseGemmAlphaBeta (sm_80), imported from
    ``cute/blackwell/efc/custom_epilogue_dense_gemm.py``."""

    name: ClassVar[str] = "custom_epilogue_dense_gemm"
    package: ClassVar[str] = "epilogue"
    source: ClassVar[str] = "cute/blackwell/efc/custom_epilogue_dense_gemm.py"
    # Target SM, derived by the scaffold from the instructions the example uses: sm_80: no
    # tensor-core, TMA or cp.async instruction found (SIMT and universal copies only): sm_80 is the
    # oldest SM the project builds for.
    target_sm: ClassVar[tuple[str, ...]] = ("sm_80",)
    description: ClassVar[str] = "CUTLASS CuTe DSL DenseGemmAlphaBeta, sm_80"

    # -- the workload: the example's own CLI -------------------------------------------------
    def add_problem_arguments(self, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("problem (the example's CLI)")
        g.add_argument("--alpha", type=float, default=1.0)
        g.add_argument("--beta", type=float, default=0.0)
        g.add_argument(
            "--c_dtype",
            default="Float32",
            help="a CuTe DSL type name (upstream type=cutlass.dtype)",
        )
        g.add_argument(
            "--d_dtype",
            default="Float32",
            help="a CuTe DSL type name (upstream type=cutlass.dtype)",
        )
        g.add_argument(
            "--x_dtype",
            default="Float32",
            help="a CuTe DSL type name (upstream type=cutlass.dtype)",
        )
        g.add_argument("--x_factor", type=float, default=3.0)
        g.add_argument(
            "--y_dtype",
            default="Float32",
            help="a CuTe DSL type name (upstream type=cutlass.dtype)",
        )

    def problem_from_args(self, args: argparse.Namespace) -> dict[str, Any]:
        problem = {k: _json(getattr(args, k, d)) for k, d in PROBLEM_DEFAULTS.items()}
        self.validate(problem)
        return problem

    def check_problems(self) -> list[dict[str, Any]]:
        """The example's defaults. Add a shape that is not a multiple of the tile and,
        where the kernel takes one, a batched one: a check must be able to fail."""
        return [dict(PROBLEM_DEFAULTS)]

    # -- configs: constructor and compile-time parameters -----------------------------------
    def default_config(self, problem: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    # -- what only a person can write -------------------------------------------------------
    def tensor_specs(self, problem: Mapping[str, Any]) -> dict[str, TensorSpec]:
        """Every tensor argument of the entry call, by name."""
        # TODO(scaffold): the entry's tensor arguments were not recognised: return one TensorSpec
        # per tensor it takes (see the example's run function) and pass them in plan()'s args()
        raise NotImplementedError("TODO(scaffold): write tensor_specs")

    def reference_fn(self, problem: Mapping[str, Any], inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The expected outputs, by name, in float32 (or wider), with PyTorch."""
        # TODO(scaffold): compute each output from `inputs` (torch tensors on the inputs' device, in
        # the storage shapes of tensor_specs) in float32; upstream checks with assert_close at L289;
        # assert_close at L292; assert_close at L296; assert_close at L299
        raise NotImplementedError("TODO(scaffold): write reference_fn")

    def _algorithmic_flops_bytes(self, problem: Mapping[str, Any]) -> tuple[float, float]:
        """(FLOPs, minimum DRAM bytes) of the workload, whatever the implementation."""
        # TODO(scaffold): the FLOPs the workload needs (2*M*N*K for a GEMM) and the bytes every
        # input is read and every output written once
        raise NotImplementedError("TODO(scaffold): write _algorithmic_flops_bytes")

    # -- how the upstream entry point is reached --------------------------------------------
    def plan(self, problem: Mapping[str, Any], config: Mapping[str, Any]) -> CuteKernel:
        # TODO(scaffold): the constructor of DenseGemmAlphaBeta is inherited from a class outside
        # this file: build the object and the argument tuple by hand (see the module docstring)
        raise NotImplementedError("TODO(scaffold): write plan")


def _json(value: Any) -> Any:
    """Tuples to lists, so that a problem is the JSON a record stores."""
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    return value
