"""GEMM templates: a nest tensorized with the GEMM intrinsic (`vta.gemm` / `vta.gemm_reset`)
becomes GEMM instructions over a micro-op kernel."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vta.isa import MemType

from ..arith.linear import linear
from ..errors import LoweringError
from ..tir import expr as E
from .dma import to_elements
from .environment import GEMM_RESET_CALL, Environment
from .evaluate import Loop, affine
from .kernel import Kernel
from .ops import Gemm, Slot
from .template import Instance, Item, OpTemplate, host_values, linear_base


def element_fit(fit: tuple[int, list[int]], lanes: int, what: str) -> tuple[int, list[int]]:
    """A micro-op address fit (whole elements apart: the lanes are inside the intrinsic)."""
    base, strides = fit
    if base % lanes or any(s % lanes for s in strides):
        raise LoweringError(f"{what}: an address is not aligned to a {lanes}-lane element")
    return base // lanes, [s // lanes for s in strides]


class Operands:
    """The on-chip operands of a nest: buffers, index expressions, the loops that step over
    elements (`kept`) with each operand's element stride along them (host-independent when
    the indices are linear), and each instance's base element.

    In a tensorized nest the loops step over whole elements (the intrinsic covers the lanes);
    an `alu` stage's nest (`scalar`) also runs over the lanes, which are stripped here."""

    def __init__(
        self,
        env: Environment,
        nest: list[Loop],
        loads: list[E.BufferLoad],
        what: str,
        scalar: bool = False,
    ):
        self.nest, self.what, self.scalar = nest, what, scalar
        self.buffers = [x.buffer for x in loads]
        self.index = [x.indices[0] for x in loads]
        self.lanes = [env.lanes(b.scope) for b in self.buffers]
        self.forms = [linear(e) for e in self.index]
        self.kept: list[int] | None = None
        self.strides: list[list[int]] | None = None
        if all(f is not None for f in self.forms):
            fits = [
                (0, [f[0].get(lp.var, 0) if lp.extent > 1 else 0 for lp in nest])
                for f in self.forms
            ]
            self.kept, elems = self._elements(fits)
            self.strides = [st for _, st in elems]

    def _elements(self, fits: list[tuple[int, list[int]]]) -> tuple[list[int], list]:
        """Scalar (base, strides) fits -> kept loops and element fits."""
        if self.scalar:
            return to_elements(self.nest, fits, self.lanes[0], self.what)
        elems = [
            element_fit(f, lanes, self.what) for f, lanes in zip(fits, self.lanes, strict=True)
        ]
        return list(range(len(self.nest))), elems

    def bases(self, instances: Sequence[Instance]) -> tuple[list[list[int]], list]:
        """Per instance, each operand's base element and (kept loops, element strides)."""
        if self.strides is None:
            bases, geometry = [], []
            for inst in instances:
                fits = [affine(e, self.nest, inst.host, self.what) for e in self.index]
                kept, elems = self._elements(fits)
                bases.append([b for b, _ in elems])
                geometry.append((kept, [st for _, st in elems]))
            return bases, geometry
        hosts, n = host_values(instances, 0), len(instances)
        names = {lp.var for lp in self.nest}
        columns = []
        for form, lanes in zip(self.forms, self.lanes, strict=True):
            base = linear_base(form, names, hosts, n)
            if (base % lanes).any():
                raise LoweringError(
                    f"{self.what}: an address is not aligned to a {lanes}-lane element"
                )
            columns.append(base // lanes)
        return np.stack(columns, axis=1).tolist(), [(self.kept, self.strides)] * n


class GemmTemplate(OpTemplate):
    """GEMM instructions for a nest whose leaf is `vta.gemm(acc, inp, wgt)` or its reset."""

    def __init__(self, env: Environment, nest: list[Loop], call: E.Call):
        self.what = f"GEMM micro-op loops ({', '.join(lp.name for lp in nest)})"
        self.reset = call.op == GEMM_RESET_CALL
        self.operands = Operands(env, nest, [ptr.args[0] for ptr in call.args], self.what)
        self.env, self.nest = env, nest
        ld = env.config.log_depth
        self.widths = [ld[MemType.ACC], ld[MemType.INP], ld[MemType.WGT]]
        self.kernel = None
        if self.operands.strides is not None:
            self.kernel = self._plan((self.operands.kept, self.operands.strides))

    def _plan(self, geometry: tuple[list[int], list[list[int]]]) -> Kernel:
        _, strides = geometry  # every nest loop is kept
        if self.reset:
            strides = strides + [[0] * len(self.nest)] * 2
        loops = [(lp.extent, [f[k] for f in strides]) for k, lp in enumerate(self.nest)]
        cap = self.env.config.depth[MemType.UOP] // 8
        return Kernel.plan(loops, self.widths, cap, gemm=True)

    def describe(self) -> str:
        names = ", ".join(b.name for b in self.operands.buffers)
        kernel = self.kernel.describe() if self.kernel else "per-instance kernel"
        reset = " reset" if self.reset else ""
        return f"GEMM{reset} ({names}): {kernel}"

    def instantiate(self, instances: Sequence[Instance]) -> list[list[Item]]:
        bases, strides = self.operands.bases(instances)
        out = []
        for inst, base, stride in zip(instances, bases, strides, strict=True):
            kernel = self.kernel or self._plan(stride)
            slots = [Slot(b, inst.thread) for b in self.operands.buffers]
            if self.reset:
                base, slots = base + [0, 0], slots + [None, None]
            out.append(
                [
                    Gemm(uops, kernel.folded, self.reset, tuple(slots))
                    for uops in kernel.instances(base)
                ]
            )
        return out
