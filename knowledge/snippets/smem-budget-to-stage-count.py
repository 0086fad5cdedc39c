"""Plan the number of A/B stages from the SMEM capacity, the one-stage layouts and the
epilogue's buffers (host-side code, run at trace time inside a @cute.jit function).

Shown in knowledge/optimizations/smem-budget-to-stage-count.md.
"""

# ruff: noqa: E402  (the shown region starts with its own imports)

SM = "generic"

# snippet:begin
import cutlass.cute as cute
import cutlass.memory


def plan_stages(
    one_stage_a,
    one_stage_b,
    a_dtype,
    b_dtype,
    epi_stage_bytes,
    epi_stages,
    arch="sm_90",
    ctas_per_sm=1,
    reserve=1024,
    spare_to_epilogue=False,
):
    """Host-side stage planning; the one-stage layouts come from the same helpers as the
    staged layouts the kernel allocates."""
    capacity = cutlass.memory.get_smem_capacity_in_bytes(arch) // ctas_per_sm
    stage = cute.size_in_bytes(a_dtype, one_stage_a) + cute.size_in_bytes(b_dtype, one_stage_b)
    fixed = reserve + epi_stage_bytes * epi_stages
    ab_stages = (capacity - fixed) // stage
    if ab_stages < 2:
        raise ValueError(f"tile does not fit: {stage} bytes a stage, {capacity - fixed} free")
    if spare_to_epilogue and epi_stage_bytes:
        epi_stages += (capacity - fixed - ab_stages * stage) // epi_stage_bytes
    return ab_stages, epi_stages


# snippet:end


_results = {}


@cute.jit
def _plan_hopper_tiles():
    """The entry's worked numbers: fp16, K-major, 64-deep K slices, four 128x32 C buffers."""
    import cutlass
    import cutlass.utils.hopper_helpers as sm90_utils
    from cutlass.tensor_utils import LayoutEnum

    for n in (256, 128):
        tile = (128, n, 64)
        a1 = sm90_utils.make_smem_layout_a(LayoutEnum.ROW_MAJOR, tile, cutlass.Float16, 1)
        b1 = sm90_utils.make_smem_layout_b(LayoutEnum.ROW_MAJOR, tile, cutlass.Float16, 1)
        epi_bytes = 128 * 32 * 2 if n == 256 else 128 * 16 * 2
        _results[n] = plan_stages(a1, b1, cutlass.Float16, cutlass.Float16, epi_bytes, 4)


def compile_snippet():
    cute.compile(_plan_hopper_tiles)
    assert _results == {256: (4, 4), 128: (6, 4)}, _results
    return "128x256x64 fp16: 4 stages; 128x128x64: 6 stages (capacity 232448 B on sm_90)"


def check():
    return compile_snippet()
