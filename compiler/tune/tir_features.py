"""Program features from the compiler's loop IR: lowered PrimFunc -> LoopNest, fast.

`loop_nest(func)` reads the main statement of a lowered function (the buffer store executed
most often), its enclosing loops (extent, kind) and, for every buffer it touches, each loop
variable's coefficient in the flattened index. Lowering costs ~10 ms, far too slow for search,
so `StructureCache` lowers only a few probes per loop *structure*: with perfect splits every
loop extent and index stride is a monomial in the split factors, i.e. log2 of it is affine in
the split knobs' log2 factors. A recipe fitted on probes (least squares, checked exact) gives
the nest of any config of that structure with one matrix product. Where a template makes
extents piecewise in a factor (a step taken as the largest divisor of it up to 4), a structure
is refined by that factor's residue until each piece has an exact recipe; configs whose
structure still has none are lowered one by one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..arith import Analyzer
from ..driver import PIPELINE
from ..errors import OperatorError
from ..schedule.ops import schedule_ops
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.functor import collect
from .features import Loop, LoopNest, nest_arrays
from .space import ConfigSpace, SplitKnob

KIND_TO_ANNOTATION = {"parallel": "parallel", "vectorized": "vec", "unrolled": "unroll"}
FEATURE_PASSES = ("inject_virtual_thread", "storage_flatten")


def lower_for_features(schedule: Any, args: Sequence[Any], loads_only: bool = True) -> S.PrimFunc:
    """The loop IR after storage flattening, before unrolling and vectorization erase loops;
    `loads_only`: each store's value is only its first read of each buffer (all `store_nest`
    needs; a stage's value can hold dozens of reads, such as Winograd's transforms)."""
    ana = Analyzer()
    body, params = schedule_ops(schedule, list(args), ana, loads_only)
    func = S.PrimFunc("main", params, body)
    for name, fn in PIPELINE:
        if name in FEATURE_PASSES:
            func = fn(func, ana)
    return func


def linear_coefficients(expr: E.Expr, out: dict[E.Var, int], scale: int = 1) -> None:
    """Add scale * (coefficient of each variable in `expr`) to `out`; a variable under a
    non-affine operation (div, mod, min, ...) counts with coefficient 1 (touched, stride unknown).
    """
    if isinstance(expr, E.Var):
        out[expr] = out.get(expr, 0) + scale
    elif isinstance(expr, E.Add | E.Sub):
        linear_coefficients(expr.a, out, scale)
        linear_coefficients(expr.b, out, -scale if isinstance(expr, E.Sub) else scale)
    elif isinstance(expr, E.Mul) and isinstance(expr.b, E.IntImm):
        linear_coefficients(expr.a, out, scale * expr.b.value)
    elif isinstance(expr, E.Mul) and isinstance(expr.a, E.IntImm):
        linear_coefficients(expr.b, out, scale * expr.a.value)
    elif isinstance(expr, E.Cast):
        linear_coefficients(expr.value, out, scale)
    elif isinstance(expr, E.Ramp):
        linear_coefficients(expr.base, out, scale)
    elif not isinstance(expr, E.IntImm | E.FloatImm):
        for v in collect(expr, lambda n: isinstance(n, E.Var)):
            out.setdefault(v, 1)


def _annotation(f: S.For) -> str:
    """A loop's annotation; thread-bound loops by their axis kind (blockIdx, threadIdx)."""
    if f.kind == "thread_binding":
        return f.thread_tag.split(".")[0]
    return KIND_TO_ANNOTATION.get(f.kind, "none")


def _trips(f: S.For, loops: list[S.For]) -> int:
    """Iterations a loop adds; a loop bound to a GPU thread axis that an enclosing loop is
    already bound to runs on the same threads (a cooperative fetch) and adds none."""
    if f.kind == "thread_binding":
        outer = loops[: next(k for k, g in enumerate(loops) if g is f)]
        if any(g.kind == "thread_binding" and g.thread_tag == f.thread_tag for g in outer):
            return 1
    return E.as_int(f.extent) or 1


def stores(body: S.Stmt) -> list[tuple[S.BufferStore, list[S.For]]]:
    """Every buffer store with its enclosing loops (outermost first), in program order."""
    found: list[tuple[S.BufferStore, list[S.For]]] = []
    stack: list[tuple[Any, list[S.For]]] = [(body, [])]
    while stack:
        node, loops = stack.pop()
        if isinstance(node, S.BufferStore):
            found.append((node, loops))
        elif isinstance(node, S.For):
            stack.append((node.body, [*loops, node]))
        elif isinstance(node, S.SeqStmt):
            stack.extend((s, loops) for s in reversed(node.seq))
        elif isinstance(node, S.IfThenElse):
            stack.extend((s, loops) for s in (node.else_case, node.then_case) if s is not None)
        elif isinstance(node, S.Allocate | S.AttrStmt | S.LetStmt):
            stack.append((node.body, loops))
    return found


def _main_store(body: S.Stmt) -> tuple[S.BufferStore, list[S.For]]:
    """The store with the largest product of enclosing loop extents (first one on ties)."""
    best: tuple[float, S.BufferStore | None, list[S.For]] = (-1.0, None, [])
    for node, loops in stores(body):
        trips = math.prod(_trips(f, loops) for f in loops)
        if trips > best[0]:
            best = (trips, node, loops)
    if best[1] is None:
        raise OperatorError("the lowered function stores to no buffer")
    return best[1], best[2]


def loop_nest(func: S.PrimFunc) -> LoopNest:
    """The main statement's loops (outermost first) and per-buffer strides of each loop var."""
    return store_nest(*_main_store(func.body))


def store_nest(store: S.BufferStore, fors: list[S.For]) -> LoopNest:
    """One store's loops (outermost first) and per-buffer strides of each loop var."""
    loops, names = [], {}
    for f in fors:
        name = f.loop_var.name
        names[name] = names.get(name, 0) + 1
        loops.append(
            Loop(
                name if names[name] == 1 else f"{name}#{names[name]}",
                E.as_int(f.extent) or 1,
                _annotation(f),
            )
        )
    loads = collect(store.value, lambda n: isinstance(n, E.BufferLoad))
    accesses = [(store.buffer, store.indices)] + [(ld.buffer, ld.indices) for ld in loads]
    strides: dict[str, list[int]] = {}
    for buf, indices in accesses:
        if buf.name in strides:
            continue
        coef: dict[E.Var, int] = {}
        for index in indices:
            linear_coefficients(index, coef)
        # a loop that runs once moves no index (the simplifier may or may not have folded it)
        strides[buf.name] = [
            coef.get(f.loop_var, 0) if lp.extent > 1 else 0
            for f, lp in zip(fors, loops, strict=True)
        ]
    return LoopNest(loops, strides)


def lower_each(
    lower: Callable[[int], LoopNest], indices: Sequence[int]
) -> tuple[list[int], list[LoopNest]]:
    """The loop nests of the configs `lower` accepts, and their positions in `indices` (an
    invalid config raises in `lower` and is left out)."""
    kept, nests = [], []
    for k, i in enumerate(indices):
        try:
            nests.append(lower(i))
            kept.append(k)
        except Exception:  # noqa: BLE001 - whatever the template or lowering raises
            continue
    return kept, nests


# ------------------------------------------------------------------------------ structure cache
@dataclass(frozen=True)
class _Structure:
    """What one class of configs shares: loop names in order, their annotations, buffers."""

    names: tuple[str, ...]
    ann: tuple[int, ...]
    buffers: tuple[str, ...]

    @staticmethod
    def of(nest: LoopNest) -> _Structure:
        _, ann, _, buffers = nest_arrays(nest)
        return _Structure(tuple(lp.name for lp in nest.loops), tuple(ann.tolist()), buffers)


@dataclass
class _Recipe:
    """log2 extents (L) and log2 |strides| (B, L) of named loops, affine in the split knobs'
    log2 factors, and which loops move which buffer; shared by every structure with these
    loops and buffers, whatever their order."""

    names: tuple[str, ...]
    buffers: tuple[str, ...]
    weights: np.ndarray  # (n_z + 1, L + B * L)
    touches: np.ndarray  # (B, L) bool

    def predict(self, z: np.ndarray, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Extents (n, L) and |strides| (n, B, L) with loops in the order of `names`."""
        logs = np.hstack([z, np.ones((len(z), 1))]) @ self.weights
        values = np.rint(np.exp2(logs))
        n_loops = len(self.names)
        order = [self.names.index(n) for n in names]
        ext = values[:, :n_loops][:, order]
        strides = values[:, n_loops:].reshape(len(z), -1, n_loops)[:, :, order]
        return ext, strides * self.touches[:, order] * (ext[:, None, :] > 1)

    def matches(self, z: np.ndarray, nests: Sequence[LoopNest]) -> bool:
        for k, nest in enumerate(nests):
            e, _, s, buffers = nest_arrays(nest)
            names = [lp.name for lp in nest.loops]
            if buffers != self.buffers or sorted(names) != sorted(self.names):
                return False
            ext, strides = self.predict(z[k : k + 1], names)
            if not (np.array_equal(e, ext[0]) and np.array_equal(np.abs(s), strides[0])):
                return False
        return True


def _fit(z: np.ndarray, nests: Sequence[LoopNest], rank: int) -> _Recipe | None:
    """The exact affine recipe through probes of one structure, or None (too few probes, not
    monomial). A stride is only seen where its loop runs more than once."""
    x = np.hstack([z, np.ones((len(z), 1))])
    arrays = [nest_arrays(n) for n in nests]
    ext = np.stack([a[0] for a in arrays])  # (P, L)
    strides = np.abs(np.stack([a[2] for a in arrays]))  # (P, B, L)
    seen = np.broadcast_to(ext[:, None, :] > 1, strides.shape)
    touches = (strides != 0).any(axis=0)
    if np.any(seen & ((strides != 0) != touches)):
        return None  # a loop moves a buffer in some configs and not in others
    columns = [np.log2(ext)]
    masks = [np.ones_like(ext, dtype=bool)]
    columns.append(np.log2(np.maximum(strides, 1)).reshape(len(z), -1))
    masks.append((seen & touches).reshape(len(z), -1))
    y, mask = np.hstack(columns), np.hstack(masks)
    weights = np.zeros((x.shape[1], y.shape[1]))
    for col in range(y.shape[1]):
        rows = mask[:, col]
        if not rows.any():
            continue
        if np.linalg.matrix_rank(x[rows]) < rank:
            return None
        weights[:, col] = np.linalg.lstsq(x[rows], y[rows, col], rcond=None)[0]
    first = nests[0]
    recipe = _Recipe(tuple(lp.name for lp in first.loops), arrays[0][3], weights, touches)
    return recipe if recipe.matches(z, nests) else None


def _affine_rank(z: np.ndarray) -> int:
    """The dimension of the affine span of the rows of `z`, plus one."""
    return int(np.linalg.matrix_rank(np.hstack([z, np.ones((len(z), 1))])))


def _one_structure(nests: Sequence[LoopNest]) -> _Structure | None:
    """The structure all `nests` share, or None."""
    structure = _Structure.of(nests[0])
    return structure if all(_Structure.of(n) == structure for n in nests[1:]) else None


@dataclass(frozen=True)
class _Refined:
    """A class split by the residues of one split knob's factors (`knob`: its position among
    the split knobs): each residue is a subclass of its own."""

    knob: int


_Entry = tuple[_Structure, _Recipe] | _Refined | None


class StructureCache:
    """LoopNest arrays of many configs of one task, lowering only a few probes per structure.

    `lower(index) -> LoopNest` lowers one config (raising if it is invalid). A structure class
    is the set of configs sharing the digits of every knob that is not a split, and which split
    factors are 1 (a loop of extent 1 vanishes, which can turn a fused loop's div/mod index
    into an affine one or untouch a buffer). A class no recipe fits is refined by the residues
    of the split knob whose residues separate its probes into pieces that each fit. A factor's
    residue is its gcd with RESIDUE_MODULUS and, up to SMALL_FACTOR, the factor itself: a
    template that steps a loop by the largest divisor of a factor up to 4 (the x86 register
    tiles' unrolled reductions on 16-register targets) makes extents monomial within a residue
    but not across residues, and leaves a loop of extent 1 where the factor is the step.
    """

    RESIDUE_MODULUS = 12  # divisibility by 2, 3 and 4
    SMALL_FACTOR = 4

    def __init__(self, space: ConfigSpace, lower: Any, seed: int = 0, probes: int = 2):
        self.space = space
        self.lower = lower
        self.rng = np.random.default_rng(seed)
        self.probes = probes
        knobs = list(space.knobs.values())
        self._split = np.array([isinstance(k, SplitKnob) for k in knobs])
        self._split_cols = np.flatnonzero(self._split)
        self._z_tables = [k.features for k in knobs if isinstance(k, SplitKnob)]
        # per split knob: each candidate's pattern of unit factors, as a small integer
        self._units = [(t == 0) @ (1 << np.arange(t.shape[1])) for t in self._z_tables]
        # per split knob: each candidate's residue class (its factors' gcds with the modulus)
        self._residues = [
            self._residue_classes(np.array(k.candidates)) for k in knobs if isinstance(k, SplitKnob)
        ]
        self._base = int((~self._split).sum()) + len(self._units)
        self._recipes: list[_Recipe] = []
        self._classes: dict[tuple, _Entry] = {}
        # a refined class's probes, passed on to the subclasses they belong to
        self._seeds: dict[tuple, tuple[np.ndarray, list[LoopNest]]] = {}

    def _residue_classes(self, factors: np.ndarray) -> np.ndarray:
        """Each candidate's residue class (n,) from its factors (n, n_out), as a small integer."""
        small = np.where(factors <= self.SMALL_FACTOR, factors, 0)
        residues = np.hstack([np.gcd(factors, self.RESIDUE_MODULUS), small])
        return np.unique(residues, axis=0, return_inverse=True)[1].ravel()

    def z(self, digits: np.ndarray) -> np.ndarray:
        """Split knobs' log2 factors of each config, (n, n_z)."""
        split = digits[:, self._split]
        if not self._z_tables:
            return np.zeros((len(digits), 0))
        return np.hstack([t[split[:, j]] for j, t in enumerate(self._z_tables)]).astype(np.float64)

    def _keys(self, digits: np.ndarray) -> np.ndarray:
        """Each config's class: its non-split digits, then its splits' unit-factor patterns."""
        split = digits[:, self._split]
        units = [u[split[:, j]] for j, u in enumerate(self._units)]
        return np.column_stack([digits[:, ~self._split], *units]).astype(np.int64)

    def _members(self, key: tuple) -> list[np.ndarray]:
        """Per split knob, the candidates of the class: its unit-factor pattern, then the
        residues of the refinements (pairs of knob and residue after the base key)."""
        patterns = key[self._base - len(self._units) : self._base]
        members = [np.flatnonzero(u == p) for u, p in zip(self._units, patterns, strict=True)]
        for j, residue in zip(key[self._base :: 2], key[self._base + 1 :: 2], strict=True):
            members[j] = members[j][self._residues[j][members[j]] == residue]
        return members

    def _class_rank(self, key: tuple) -> int:
        tables = [t[m] for t, m in zip(self._z_tables, self._members(key), strict=True)]
        return 1 + sum(
            np.linalg.matrix_rank(t - t.mean(axis=0)) if len(t) > 1 else 0 for t in tables
        )

    def _probe(self, key: tuple, n: int) -> tuple[np.ndarray, list[LoopNest]]:
        """The digits and nests of up to `n` valid members; each split knob's residues are
        taken in turn (every residue among the first probes), its members at random."""
        digits = np.empty((n, len(self._split)), dtype=np.int64)
        digits[:, ~self._split] = key[: self._base - len(self._units)]
        for j, members in enumerate(self._members(key)):
            residues = self._residues[j][members]
            order = self.rng.permutation(np.unique(residues))
            for row in range(n):
                pool = members[residues == order[row % len(order)]]
                digits[row, self._split_cols[j]] = self.rng.choice(pool)
        kept, nests = lower_each(self.lower, self.space.indices(digits).tolist())
        return digits[kept], nests

    def _more(self, key: tuple, rank: int, digits: np.ndarray, nests: list[LoopNest]):
        """The probes topped up to `probes` + 2 rank + 4."""
        more_digits, more = self._probe(key, max(0, self.probes + 2 * rank + 4 - len(nests)))
        return np.vstack([digits, more_digits]), nests + more

    def _learn(self, key: tuple) -> _Entry:
        digits, nests = self._seeds.pop(key, None) or self._probe(key, self.probes)
        if not nests:
            return None
        rank = self._class_rank(key)
        # a recipe is affine in the split factors: only probes that span the class's factors
        # decide it for every member (fewer may agree with another class's recipe by chance)
        spans = _affine_rank(self.z(digits)) >= rank
        if not spans:
            digits, nests = self._more(key, rank, digits, nests)
        structure = _one_structure(nests)
        if structure is not None:
            z = self.z(digits)
            for recipe in self._recipes:
                if recipe.matches(z, nests):
                    return structure, recipe
        if spans:
            digits, nests = self._more(key, rank, digits, nests)
            structure = _one_structure(nests)
        recipe = None if structure is None else _fit(self.z(digits), nests, rank)
        if recipe is None:
            return self._refinement(key, digits, nests)
        self._recipes.append(recipe)
        return structure, recipe

    def _refinement(self, key: tuple, digits: np.ndarray, nests: list[LoopNest]) -> _Entry:
        """The first split knob not yet refined whose residues part the probes into pieces of
        one structure and an exact affine fit each, or None (configs lowered one by one)."""
        refined = set(key[self._base :: 2])
        z = self.z(digits)
        for j, members in enumerate(self._members(key)):
            if j in refined or len(np.unique(self._residues[j][members])) < 2:
                continue
            residues = self._residues[j][digits[:, self._split_cols[j]]]
            pieces = [np.flatnonzero(residues == r) for r in np.unique(residues)]
            if len(pieces) > 1 and all(
                _one_structure(part := [nests[i] for i in rows]) is not None
                and _fit(z[rows], part, 0) is not None
                for rows in pieces
            ):
                for rows in pieces:
                    sub = (*key, j, int(residues[rows[0]]))
                    self._seeds[sub] = digits[rows], [nests[i] for i in rows]
                return _Refined(j)
        return None

    def arrays(
        self, digits: np.ndarray
    ) -> list[tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray] | None]]:
        """Per structure class: (rows, (extents, annotations, strides)) or (rows, None) when
        the class has no recipe (its configs must be lowered one by one)."""
        out: list = []
        self._serve(self._keys(digits), np.arange(len(digits)), digits, out)
        return out

    def _serve(self, keys: np.ndarray, rows: np.ndarray, digits: np.ndarray, out: list) -> None:
        """Append `arrays` entries of the configs `rows` (their class keys: `keys`) to `out`."""
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
        for c, key in enumerate(map(tuple, uniq.tolist())):
            sel = rows[inverse.ravel() == c]
            if key not in self._classes:
                self._classes[key] = self._learn(key)
            entry = self._classes[key]
            if isinstance(entry, _Refined):
                j = entry.knob
                residues = self._residues[j][digits[sel, self._split_cols[j]]]
                sub = np.column_stack(
                    [
                        np.tile(np.array(key, np.int64), (len(sel), 1)),
                        np.full(len(sel), j),
                        residues,
                    ]
                )
                self._serve(sub, sel, digits, out)
            elif entry is None:
                out.append((sel, None))
            else:
                structure, recipe = entry
                ext, strides = recipe.predict(self.z(digits[sel]), structure.names)
                ann = np.broadcast_to(np.array(structure.ann, dtype=np.int64), ext.shape)
                out.append((sel, (ext, ann, strides)))
