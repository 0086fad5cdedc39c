"""The EFC idea reduced to its skeleton: one user epilogue function, run in three phases
(analyse which tensors it reads and writes, trace it on the device, and evaluate it with
torch as the reference). The ANALYSE and REFERENCE phases run here; the DEVICE phase is the
custom_epilogue_dense_gemm example's (sm_100a), described in the closing comment.

Shown in knowledge/languages/cute-dsl/optimizations/efc-traced-fused-epilogue.md.
"""

SM = "generic"


# snippet:begin
# The user side: one function, three meanings.
def epilogue(efc_config, C, D, alpha, beta, X, x_factor, Y):
    acc = efc_config.accum()
    Y.store(acc)  # raw accumulator as a second output
    D.store(efc_config.relu(acc * alpha + C.load() * beta) + X.load() * x_factor)


# The framework side, reduced to its skeleton (names are this project's).
class Phase:
    ANALYSE, DEVICE, REFERENCE = range(3)


class TensorArg:
    def __init__(self, name, ctx):
        self.name, self.ctx = name, ctx

    def load(self):
        if self.ctx.phase == Phase.ANALYSE:
            self.ctx.reads.add(self.name)
            return 1  # any value that lets the expression run
        if self.ctx.phase == Phase.DEVICE:
            return self.ctx.rmem_in[self.name].load().to(self.ctx.epi_dtype)
        return self.ctx.torch_args[self.name]

    def store(self, value):
        if self.ctx.phase == Phase.ANALYSE:
            self.ctx.writes.add(self.name)
        elif self.ctx.phase == Phase.DEVICE:
            frag = self.ctx.rmem_out[self.name]
            frag.store(value.to(frag.element_type))
        else:
            self.ctx.torch_args[self.name].copy_(value)


# Host: run ANALYSE once -> reads/writes -> one G2S atom per read tensor, one S2G atom per written
# tensor, SMEM stages, tx_count = sum of read sub-tile bytes -> cute.compile. Device, per epilogue
# sub-tile: c_ring.consumer_wait; SMEM->RMEM for reads; fence_proxy("async.shared");
# c_ring.consumer_release; run DEVICE; RMEM->SMEM for writes; fence; named barrier; one warp
# issues the TMA stores.
# snippet:end


class Ctx:
    """What the framework hands the TensorArgs in one phase (ANALYSE or REFERENCE here)."""

    def __init__(self, phase, torch_args=None, acc=None):
        self.phase, self.torch_args, self.acc = phase, torch_args or {}, acc
        self.reads, self.writes = set(), set()

    def accum(self):
        return 1 if self.phase == Phase.ANALYSE else self.acc

    def relu(self, x):
        return x if self.phase == Phase.ANALYSE else x.clamp_min(0)


def _run(device):
    import torch

    ctx = Ctx(Phase.ANALYSE)
    names = ("C", "D", "X", "Y")
    epilogue(ctx, *(TensorArg(n, ctx) for n in names[:2]), 2.0, 0.5, TensorArg("X", ctx), 3.0,
             TensorArg("Y", ctx))  # fmt: skip
    assert ctx.reads == {"C", "X"} and ctx.writes == {"D", "Y"}, (ctx.reads, ctx.writes)
    g = torch.Generator(device=device).manual_seed(0)
    t = {n: torch.randn(64, 32, device=device, generator=g) for n in names}
    acc = torch.randn(64, 32, device=device, generator=g)
    ref = Ctx(Phase.REFERENCE, dict(t), acc)
    want_d = (acc * 2.0 + t["C"] * 0.5).clamp_min(0) + t["X"] * 3.0
    epilogue(ref, *(TensorArg(n, ref) for n in names[:2]), 2.0, 0.5, TensorArg("X", ref), 3.0,
             TensorArg("Y", ref))  # fmt: skip
    assert torch.equal(t["D"], want_d) and torch.equal(t["Y"], acc)
    return f"ANALYSE: reads {sorted(ctx.reads)}, writes {sorted(ctx.writes)}; REFERENCE matches"


def compile_snippet():
    return _run("cpu")


def check():
    return _run("cuda")
