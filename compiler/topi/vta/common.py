"""Parts shared by the accelerator operators: the fused ALU epilogue (bias, shift, clip, relu),
the scheduling of the epilogue, the bias load and the output store, and of the GEMM stage's
input and weight loads (their templates' and the auto-scheduler's)."""

from __future__ import annotations

from typing import Any

from ... import te
from ...schedule.schedule import Schedule
from ...vta.environment import Environment, shift_right


def epilogue(
    acc: te.Tensor,
    bias: te.Tensor | None,
    bias_index: Any,
    shift: int,
    clip: tuple[int, int] | None,
    relu: bool,
    out_dtype: str,
) -> te.Tensor:
    """int8 output = cast(clip(relu(shift_right(acc + bias, shift)))); the arithmetic happens in
    one accumulator-scope stage ("vta_alu") that the ALU applies op by op in place, or as one
    REQ where the config has alu_requant and the clip is the int8 range (lo 0 with relu). relu
    folds into the clip's lower bound (max(max(x, 0), lo) = max(x, max(lo, 0))): one op less."""
    src = acc
    lo, hi = clip if clip is not None else (None, None)
    if relu:
        lo = 0 if lo is None else max(lo, 0)

    def alu(*i):
        x = acc(*i)
        if bias is not None:
            x = x + bias(*bias_index(*i))
        if shift:
            x = shift_right(x, shift)
        if lo is not None:
            x = te.max(x, lo)
        if hi is not None:
            x = te.min(x, hi)
        return x

    if bias is not None or shift or relu or clip is not None:
        src = te.compute(acc.shape, alu, f"{acc.name}_alu", tag="vta_alu")
    return te.compute(acc.shape, lambda *i: src(*i).astype(out_dtype), "res", tag="vta_output")


def schedule_epilogue(
    s: Schedule, out: te.Tensor, acc: te.Tensor, at: Any, store_at: Any, env: Environment
) -> None:
    """Compute the accumulator and its ALU stage at `at` of the output, the output store as a
    DMA copy from `store_at`, and any bias through a DMA copy into the accumulator scope."""
    alu = out.op.input_tensors[0]
    s[acc].set_scope(env.acc_scope)
    if alu is not acc:
        s[alu].set_scope(env.acc_scope)
        s[alu].compute_at(s[out], at)
        s[alu].pragma(s[alu].op.axis[0], env.alu)
        for t in alu.op.input_tensors:
            if t is not acc:
                cached = s.cache_read(t, env.acc_scope, [alu])
                s[cached].compute_at(s[out], at)
                s[cached].pragma(s[cached].op.axis[0], env.dma_copy)
    s[acc].compute_at(s[out], at)
    s[out].pragma(store_at, env.dma_copy)


def schedule_gemm(s: Schedule, acc: te.Tensor, at: Any, gemm_axis: Any, env: Environment) -> None:
    """Load the GEMM stage's input tiles (its padded copy, if it reads one) and weight tiles by
    DMA into the input and weight buffers at loop `at` of the stage, and tensorize the stage
    with the GEMM intrinsic from `gemm_axis` in."""
    data, kernel = acc.op.input_tensors
    if getattr(data.op, "tag", "") == "pad":
        s[data].set_scope(env.inp_scope)
        cdata = data
    else:
        cdata = s.cache_read(data, env.inp_scope, [acc])
    ckernel = s.cache_read(kernel, env.wgt_scope, [acc])
    for t in (cdata, ckernel):
        s[t].compute_at(s[acc], at)
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    s[acc].tensorize(gemm_axis, env.gemm)


def vthread_split(s: Schedule, out: te.Tensor, axis: Any, n: int) -> tuple[list, Any]:
    """Split `axis` into `n` virtual threads (bound to cthread) when n > 1: ([thread], inner)."""
    if n == 1:
        return [], axis
    v, inner = s[out].split(axis, nparts=n)
    s[out].bind(v, te.thread_axis("cthread"))
    return [v], inner
