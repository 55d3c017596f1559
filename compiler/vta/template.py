"""Operation templates: the DMA/tensorize/micro-op form of the loop IR.

The `inject_ops` pass replaces each accelerator leaf nest (a `dma_copy` copy, a tensorized GEMM
nest, an `alu` stage) by an `OpTemplate` statement. A template holds everything about the nest
that does not depend on the host loops around it (memory types, strides, micro-op kernels,
folded loops), analysed once; `instantiate` fills in what does (addresses, padding) for every
host iteration and virtual thread at once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from ..errors import LoweringError
from ..tir import expr as E
from ..tir import stmt as S
from .ops import Op, Slot


@dataclasses.dataclass(frozen=True)
class Alias:
    """From here on `dst` lives in `src`'s rows shifted by `offset` (an ALU stage updating its
    input in place); `src` may not be read again."""

    dst: Slot
    src: Slot
    offset: int

    def __str__(self) -> str:
        return f"alias {self.dst} = {self.src}+{self.offset}"


@dataclasses.dataclass(frozen=True)
class Free:
    """The end of an on-chip buffer's scope: its rows may be reused."""

    slot: Slot

    def __str__(self) -> str:
        return f"free {self.slot}"


Item = Op | Alias | Free


@dataclasses.dataclass(frozen=True)
class Instance:
    """One execution of a template: its virtual thread and the host loop values around it."""

    thread: tuple[int, ...]
    host: dict[E.Var, int]


class OpTemplate(S.Stmt):
    """A leaf nest replaced by the accelerator operations it stands for."""

    _fields = ()

    def instantiate(self, instances: Sequence[Instance]) -> list[list[Item]]:
        """The operations of each instance, in order."""
        raise NotImplementedError

    def describe(self) -> str:
        """One or more lines for the IR printer."""
        raise NotImplementedError


def host_values(instances: Sequence[Instance], ndim: int) -> dict[E.Var, np.ndarray]:
    """Each host variable's value per instance, shaped (instances, 1, ..., 1) with `ndim`
    trailing axes so that it broadcasts against a nest grid."""
    names = instances[0].host.keys() if instances else ()
    shape = (-1,) + (1,) * ndim
    return {v: np.array([i.host[v] for i in instances], np.int64).reshape(shape) for v in names}


def linear_base(
    form: tuple[dict[E.Var, int], int], nest: set[E.Var], hosts: dict[E.Var, np.ndarray], n: int
) -> np.ndarray:
    """The part of a linear address that the host loops set, per instance (of `n`)."""
    terms, const = form
    base = np.full(n, const, dtype=np.int64)
    for v, c in terms.items():
        if v in nest:
            continue
        if v not in hosts:
            raise LoweringError(f"index uses '{v.name}', which is not a loop of the host or nest")
        base = base + c * hosts[v].reshape(-1)
    return base
