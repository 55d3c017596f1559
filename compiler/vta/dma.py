"""DMA injection: a `dma_copy` loop nest between DRAM and a scope becomes 2-D LOAD/STORE
instructions (x contiguous in DRAM, y strided, zero padding around the rectangle on loads)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from vta.isa import MemType, Module

from ..errors import LoweringError
from ..tir import expr as E
from ..tir import stmt as S
from .environment import ACC_SCOPE, SCOPE_MEM, Environment
from .evaluate import Loop, affine, evaluate, full, grid
from .tokens import Op

Fit = tuple[int, list[int]]  # (base, stride per loop)


def to_elements(
    loops: Sequence[Loop], fits: list[Fit], lanes: int, what: str
) -> tuple[list[int], list[Fit]]:
    """Strip the innermost loops spanning one `lanes`-scalar element from affine fits of scalar
    addresses; the kept loop indices and the fits in element units."""
    kept = [k for k, lp in enumerate(loops) if lp.extent > 1]
    inner = 1
    while inner < lanes:
        if not kept:
            raise LoweringError(
                f"{what}: the nest covers {inner} scalars, less than a {lanes}-lane element"
            )
        k = kept.pop()
        if any(strides[k] != inner for _, strides in fits):
            raise LoweringError(
                f"{what}: loop '{loops[k].name}' is inside a {lanes}-lane element but its "
                "addresses are not contiguous; keep the element axes innermost and unsplit"
            )
        inner *= loops[k].extent
    if inner != lanes:
        raise LoweringError(
            f"{what}: the innermost loops span {inner} scalars, not a {lanes}-lane element"
        )
    out = []
    for base, strides in fits:
        if base % lanes or any(strides[k] % lanes for k in kept):
            raise LoweringError(f"{what}: an address is not aligned to a {lanes}-lane element")
        out.append((base // lanes, [strides[k] // lanes for k in kept]))
    return kept, out


def _unpad(value: E.Expr) -> tuple[E.Expr, E.Expr | None]:
    """(the loaded value, the in-bounds condition) of `if_then_else(cond, load, 0)`."""
    if isinstance(value, E.Call) and value.op == "tir.if_then_else":
        cond, t, f = value.args
    elif isinstance(value, E.Select):
        cond, t, f = value.cond, value.t, value.f
    else:
        return value, None
    if not E.is_const(f, 0):
        raise LoweringError(f"dma_copy: padding value must be 0, got {f!r}")
    return t, cond


def _runs(valid: np.ndarray, axis: str, what: str) -> tuple[int, int, int]:
    """(pad before, size, pad after) of a contiguous run of valid rows or columns."""
    idx = np.flatnonzero(valid)
    if not idx.size or idx[-1] - idx[0] + 1 != idx.size:
        raise LoweringError(f"{what}: the in-bounds {axis} range is empty or not contiguous")
    return int(idx[0]), int(idx.size), int(valid.size - idx[-1] - 1)


def _merge(dims: list[list[int]], padded: bool) -> list[list[int]]:
    """Merge adjacent dims [extent, sram stride, dram stride] that are jointly contiguous."""
    out: list[list[int]] = []
    for d in dims:
        if out and not padded:
            o = out[-1]
            if o[1] == d[0] * d[1] and o[2] == d[0] * d[2]:
                out[-1] = [o[0] * d[0], d[1], d[2]]
                continue
        out.append(list(d))
    return out


def dma_ops(
    env: Environment,
    nest: list[Loop],
    store: S.BufferStore,
    host: dict[E.Var, int],
    sram_row: Callable[[S.Buffer], int],
    dram_name: Callable[[S.Buffer, str], str],
) -> list[Op]:
    """LOAD or STORE instructions for one instance (host values) of a dma_copy nest."""
    what = f"dma_copy into '{store.buffer.name}'"
    value, cond = _unpad(store.value)
    if store.buffer.scope in SCOPE_MEM:
        if not isinstance(value, E.BufferLoad) or value.buffer.scope != "global":
            raise LoweringError(f"{what}: expected a plain read of a DRAM tensor, got {value!r}")
        sram_buf, sram_idx, dram_buf, dram_idx = (
            store.buffer,
            store.indices[0],
            value.buffer,
            value.indices[0],
        )
        if dram_buf.dtype != sram_buf.dtype:
            raise LoweringError(
                f"{what}: DMA copies {sram_buf.dtype} as is, but '{dram_buf.name}' is "
                f"{dram_buf.dtype}; cast on the host or in an ALU stage"
            )
        mem = SCOPE_MEM[sram_buf.scope]
    else:
        inner = value.value if isinstance(value, E.Cast) else value
        if (
            cond is not None
            or not isinstance(inner, E.BufferLoad)
            or inner.buffer.scope != ACC_SCOPE
        ):
            raise LoweringError(
                f"{what}: a store to DRAM must copy (and cast to {env.out_dtype}) an "
                f"{ACC_SCOPE} buffer; compute anything else in an alu stage first"
            )
        if store.buffer.dtype != env.out_dtype:
            raise LoweringError(
                f"{what}: the accelerator stores {env.out_dtype}, not {store.buffer.dtype}"
            )
        sram_buf, sram_idx, dram_buf, dram_idx = (
            inner.buffer,
            inner.indices[0],
            store.buffer,
            store.indices[0],
        )
        mem = MemType.OUT
    lanes = env.lanes(sram_buf.scope)
    fits = [affine(sram_idx, nest, host, what), affine(dram_idx, nest, host, what)]
    kept, ((sbase, sst), (dbase, dst)) = to_elements(nest, fits, lanes, what)
    mask = None
    if cond is not None:
        full_mask = full(evaluate(cond, grid(nest, host)), nest).astype(bool)
        for k in range(len(nest)):
            if k not in kept and not (full_mask == full_mask.take([0], axis=k)).all():
                raise LoweringError(
                    f"{what}: padding must cover whole elements (loop '{nest[k].name}')"
                )
        mask = full_mask[tuple(slice(None) if k in kept else 0 for k in range(len(nest)))]
        if mask.all():
            mask = None
    if mask is not None and mem == MemType.WGT:
        raise LoweringError(
            f"{what}: local.wgt_buffer loads cannot be zero-padded (valid: local.inp_buffer "
            "and local.acc_buffer loads)"
        )
    dims = _merge(
        [[nest[k].extent, s, d] for k, s, d in zip(kept, sst, dst, strict=True)], mask is not None
    )
    if not dims or dims[-1][2] != 1 or dims[-1][1] != 1:
        dims.append([1, 1, 1])
        mask = None if mask is None else mask[..., None]
    x = dims[-1]
    has_y = len(dims) > 1 and dims[-2][1] == x[0]
    y = dims[-2] if has_y else [1, x[0], x[0]]
    outer = dims[:-2] if has_y else dims[:-1]
    if mask is not None and not has_y:
        mask = mask[..., None, :]
    sram_base = sram_row(sram_buf)
    roles = {MemType.OUT: "output", MemType.WGT: "weight"}
    name = dram_name(dram_buf, roles.get(mem, "input"))
    ops = []
    for idx in np.ndindex(*[d[0] for d in outer]):
        s0 = sram_base + sbase + sum(i * d[1] for i, d in zip(idx, outer, strict=True))
        d0 = dbase + sum(i * d[2] for i, d in zip(idx, outer, strict=True))
        rows = y[0] * x[0]
        if mem == MemType.OUT:
            ops.append(
                Op(
                    Module.STORE,
                    "store",
                    dict(
                        sram_base=s0,
                        buffer=name,
                        elem_offset=d0,
                        y_size=y[0],
                        x_size=x[0],
                        x_stride=y[2],
                    ),
                    reads=[(MemType.OUT, s0, s0 + rows)],
                )
            )
            continue
        pad = (0, 0, 0, 0)
        ysize, xsize = y[0], x[0]
        if mask is not None:
            m = mask[idx]
            y0, ysize, y1 = _runs(m.any(axis=1), "row", what)
            x0, xsize, x1 = _runs(m.any(axis=0), "column", what)
            if not (m == np.outer(m.any(axis=1), m.any(axis=0))).all():
                raise LoweringError(f"{what}: the in-bounds region is not a rectangle")
            pad = (y0, y1, x0, x1)
            d0 += y0 * y[2] + x0
        stage = Module.COMPUTE if mem == MemType.ACC else Module.LOAD
        ops.append(
            Op(
                stage,
                "load",
                dict(
                    memory_type=mem,
                    sram_base=s0,
                    buffer=name,
                    elem_offset=d0,
                    y_size=ysize,
                    x_size=xsize,
                    x_stride=y[2] if y[0] > 1 else xsize,
                    pad=pad,
                ),
                writes=[(mem, s0, s0 + rows)],
            )
        )
    return ops
