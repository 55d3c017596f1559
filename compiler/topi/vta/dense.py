"""dense_packed: a fully connected layer on the accelerator, data (N/b, C/c, b, c) times weight
(O/c, C/c, c, c), with the ALU epilogue, and its schedule template."""

from __future__ import annotations

from dataclasses import dataclass

from ... import te
from ...errors import LoweringError
from ...schedule.schedule import Schedule
from ...vta.environment import Environment, get_env
from .common import epilogue, schedule_epilogue, schedule_gemm, vthread_split


@dataclass(frozen=True)
class DenseKnobs:
    """Blocks per tile of batch, input and output channels; virtual threads over outputs."""

    tile_b: int = 1
    tile_ci: int = 1
    tile_co: int = 1
    oc_nthread: int = 1


def dense_packed(
    data: te.Tensor,
    weight: te.Tensor,
    bias: te.Tensor | None = None,
    shift: int = 0,
    clip: tuple[int, int] | None = None,
    relu: bool = False,
    env: Environment | None = None,
) -> te.Tensor:
    """int8 res[b, co, bi, ci]; bias, if any, has shape (O/c, b, c) in int32."""
    env = env or get_env()
    n, ci, bn, bc = data.shape
    co, ci2, bo, bi = weight.shape
    if (bn, bc, bo, bi, ci2) != (env.batch, env.block_in, env.block_out, env.block_in, ci):
        raise LoweringError(
            f"dense_packed: data {data.shape} / weight {weight.shape} are not packed as "
            f"NC{env.batch}n{env.block_in}c / OI{env.block_out}o{env.block_in}i"
        )
    k_o, k_i = te.reduce_axis(ci, "k_o"), te.reduce_axis(bc, "k_i")
    acc = te.compute(
        (n, co, bn, bo),
        lambda b, c, i, j: te.sum(
            data[b, k_o, i, k_i].astype(env.acc_dtype)
            * weight[c, k_o, j, k_i].astype(env.acc_dtype),
            axis=[k_o, k_i],
        ),
        "dense",
        tag="dense_packed",
    )
    return epilogue(acc, bias, lambda b, c, i, j: (c, i, j), shift, clip, relu, env.out_dtype)


def schedule_dense_packed(
    out: te.Tensor, knobs: DenseKnobs | None = None, env: Environment | None = None
) -> Schedule:
    """Output tiles (b, co) with DMA at the tile, tile_ci input blocks per load, GEMM tensorized."""
    env = env or get_env()
    k = knobs or DenseKnobs()
    s = te.create_schedule(out.op)
    alu = out.op.input_tensors[0]
    acc = alu if alu.op.tag == "dense_packed" else alu.op.input_tensors[0]
    b, co, bi, ci = s[out].op.axis
    b0, b1 = s[out].split(b, k.tile_b)
    co0, co1 = s[out].split(co, k.tile_co)
    v_oc, co0 = vthread_split(s, out, co0, k.oc_nthread)
    s[out].reorder(*v_oc, b0, co0, b1, co1, bi, ci)
    schedule_epilogue(s, out, acc, co0, b1, env)
    ab, aco, abi, aci = s[acc].op.axis
    k_o, k_i = s[acc].op.reduce_axis
    ko0, ko1 = s[acc].split(k_o, k.tile_ci)
    s[acc].reorder(ko0, ko1, ab, aco, abi, aci, k_i)
    schedule_gemm(s, acc, ko0, abi, env)
    return s
