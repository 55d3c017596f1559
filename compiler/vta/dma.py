"""DMA templates: a `dma_copy` loop nest between DRAM and a scope becomes 2-D LOAD/STORE
instructions (x contiguous in DRAM, y strided, zero padding around the rectangle on loads).

The nest's strides and element geometry are analysed once; the addresses and the padding of each
host iteration are computed for all instances at once (one numpy evaluation of the padding
condition over instances x nest)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from vta.isa import MemType

from ..arith.linear import linear
from ..errors import LoweringError
from ..tir import expr as E
from ..tir import stmt as S
from .environment import ACC_SCOPE, SCOPE_MEM, Environment
from .evaluate import Loop, affine, evaluate
from .ops import Load, Slot, Store
from .template import Instance, Item, OpTemplate, host_values, linear_base

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


class DmaTemplate(OpTemplate):
    """A `dma_copy` nest: LOAD into an SRAM scope or STORE from the accumulator scope."""

    def __init__(
        self,
        env: Environment,
        nest: list[Loop],
        store: S.BufferStore,
        dram_name: Callable[[S.Buffer, str], str],
    ):
        self.what = what = f"dma_copy into '{store.buffer.name}'"
        value, cond = _unpad(store.value)
        if store.buffer.scope in SCOPE_MEM:
            if not isinstance(value, E.BufferLoad) or value.buffer.scope != "global":
                raise LoweringError(
                    f"{what}: expected a plain read of a DRAM tensor, got {value!r}"
                )
            sram_buf, sram_idx = store.buffer, store.indices[0]
            dram_buf, dram_idx = value.buffer, value.indices[0]
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
            sram_buf, sram_idx = inner.buffer, inner.indices[0]
            dram_buf, dram_idx = store.buffer, store.indices[0]
            mem = MemType.OUT
        roles = {MemType.OUT: "output", MemType.WGT: "weight"}
        self.dram = dram_name(dram_buf, roles.get(mem, "input"))
        self.mem, self.nest, self.cond, self.sram_buf = mem, nest, cond, sram_buf
        self.index = (sram_idx, dram_idx)
        self.lanes = env.lanes(sram_buf.scope)
        self.forms = [linear(sram_idx), linear(dram_idx)]
        self.strides = None  # element strides of the kept loops, when host-independent
        if all(f is not None for f in self.forms):
            fits = [
                (0, [f[0].get(lp.var, 0) if lp.extent > 1 else 0 for lp in nest])
                for f in self.forms
            ]
            self.kept, elems = to_elements(nest, fits, self.lanes, what)
            self.strides = [st for _, st in elems]

    def describe(self) -> str:
        op = "STORE" if self.mem == MemType.OUT else f"LOAD {self.mem.name}"
        loops = ", ".join(f"{lp.name}:{lp.extent}" for lp in self.nest)
        sram, dram = self.index
        pad = f" if {self.cond!r} else 0" if self.cond is not None else ""
        return f"{op} {self.sram_buf.name}[{sram!r}] <-> {self.dram}[{dram!r}]{pad}  over ({loops})"

    def _fits(self, inst: Instance, bases: list[np.ndarray], k: int) -> tuple[list[int], list]:
        """Kept loops and (base, strides) in elements of SRAM and DRAM for instance k."""
        if self.strides is not None:
            out = []
            for base, strides in zip(bases, self.strides, strict=True):
                b = int(base[k])
                if b % self.lanes:
                    raise LoweringError(
                        f"{self.what}: an address is not aligned to a {self.lanes}-lane element"
                    )
                out.append((b // self.lanes, strides))
            return self.kept, out
        fits = [affine(e, self.nest, inst.host, self.what) for e in self.index]
        return to_elements(self.nest, fits, self.lanes, self.what)

    def instantiate(self, instances: Sequence[Instance]) -> list[list[Item]]:
        n, nest = len(instances), self.nest
        hosts = host_values(instances, 0)
        bases = []
        if self.strides is not None:
            names = {lp.var for lp in nest}
            bases = [linear_base(f, names, hosts, n) for f in self.forms]
        masks = None
        if self.cond is not None:
            values = host_values(instances, len(nest))
            for k, loop in enumerate(nest):
                shape = [1] * (len(nest) + 1)
                shape[k + 1] = loop.extent
                values[loop.var] = np.arange(loop.extent, dtype=np.int64).reshape(shape)
            extents = (n, *(lp.extent for lp in nest))
            masks = np.broadcast_to(evaluate(self.cond, values), extents).astype(bool)
        return [
            self._ops(inst, *self._fits(inst, bases, k), None if masks is None else masks[k])
            for k, inst in enumerate(instances)
        ]

    def _ops(self, inst: Instance, kept: list[int], fits: list, full_mask) -> list[Item]:
        """LOAD or STORE instructions for one instance (host values) of the nest."""
        nest, what, mem = self.nest, self.what, self.mem
        (sbase, sst), (dbase, dst) = fits
        mask = None
        if full_mask is not None:
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
            [[nest[k].extent, s, d] for k, s, d in zip(kept, sst, dst, strict=True)],
            mask is not None,
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
        slot = Slot(self.sram_buf, inst.thread)
        ops: list[Item] = []
        for idx in np.ndindex(*[d[0] for d in outer]):
            s0 = sbase + sum(i * d[1] for i, d in zip(idx, outer, strict=True))
            d0 = dbase + sum(i * d[2] for i, d in zip(idx, outer, strict=True))
            if mem == MemType.OUT:
                ops.append(Store(slot, s0, self.dram, d0, y[0], x[0], y[2]))
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
            stride = y[2] if y[0] > 1 else xsize
            ops.append(Load(mem, slot, s0, self.dram, d0, ysize, xsize, stride, pad))
        return ops
