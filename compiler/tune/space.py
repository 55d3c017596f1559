"""Template search spaces: knobs, the ConfigSpace they form, and ConfigEntity points in it.

A config is one integer index in a mixed-radix number system whose digits are the knobs'
candidate indices (first knob least significant, as in AutoTVM). Spaces can hold billions of
points, so nothing here enumerates a whole space: knobs enumerate their own (small) candidate
lists, and many configs at once are handled as numpy digit arrays of shape (n, n_knobs).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import TuningError

ANNOTATIONS = ("none", "unroll", "vec", "parallel")
MAX_RANGE = 2**62  # flat indices must fit int64 for the vectorized paths


def _extent(axis: Any) -> int:
    """An int extent, or the `extent`/`dom.extent` of a compiler iter var."""
    for path in (("extent",), ("dom", "extent")):
        obj = axis
        try:
            for attr in path:
                obj = getattr(obj, attr)
            return int(obj)
        except (AttributeError, TypeError):
            continue
    return int(axis)


# ------------------------------------------------------------------------------------ entities
@dataclass(frozen=True)
class SplitEntity:
    """Factors of one split loop, outermost first; their product covers the extent."""

    size: tuple[int, ...]


@dataclass(frozen=True)
class ReorderEntity:
    """A permutation of the reordered axes."""

    perm: tuple[int, ...]


@dataclass(frozen=True)
class AnnotateEntity:
    """One annotation (from ANNOTATIONS) per annotated axis."""

    anns: tuple[str, ...]


@dataclass(frozen=True)
class OtherOptionEntity:
    """The chosen value of a `define_knob` knob."""

    val: Any


# --------------------------------------------------------------------------------------- knobs
class Knob:
    """One transform space: a small list of candidate values plus a numeric feature table."""

    tag = ""

    def __init__(self, name: str, candidates: Sequence[Any]):
        if not candidates:
            raise TuningError(f"knob {name!r} has no candidates (its filter rejected all)")
        self.name = name
        self.candidates = list(candidates)
        self._lookup = {self._key(c): i for i, c in enumerate(self.candidates)}
        self.features = np.asarray([self._feature(c) for c in self.candidates], dtype=np.float32)
        if self.features.ndim == 1:
            self.features = self.features[:, None]

    def __len__(self) -> int:
        return len(self.candidates)

    @staticmethod
    def _key(value: Any) -> Any:
        return tuple(value) if isinstance(value, list | tuple) else value

    def index_of(self, value: Any) -> int:
        """Candidate index of a stored value (JSON turns tuples into lists)."""
        try:
            return self._lookup[self._key(value)]
        except (KeyError, TypeError):
            raise TuningError(
                f"knob {self.name!r} has no candidate {value!r}; valid: {self.candidates[:8]}..."
            ) from None

    def entity(self, i: int) -> Any:
        raise NotImplementedError

    def to_json(self, i: int) -> Any:
        value = self.candidates[i]
        return list(value) if isinstance(value, tuple) else value

    def _feature(self, value: Any) -> list[float]:
        raise NotImplementedError


def _is_prime(n: int) -> bool:
    """Miller-Rabin with the first 12 primes as bases: exact for every n < 3.3e24."""
    bases = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    if n < 2:
        return False
    for p in bases:
        if n % p == 0:
            return n == p
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for a in bases:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _factor(n: int) -> int:
    """A non-trivial factor of a composite n with no factor below 1000 (Pollard's rho, Brent's
    cycle finding, gcds batched)."""
    for c in itertools.count(1):
        y, g, r, q, x = 2, 1, 1, 1, 2
        while g == 1:
            x = y
            for _ in range(r):
                y = (y * y + c) % n
            k = 0
            while k < r and g == 1:
                ys = y
                for _ in range(min(128, r - k)):
                    y = (y * y + c) % n
                    q = q * abs(x - y) % n
                g = math.gcd(q, n)
                k += 128
            r *= 2
        if g == n:  # the batch overshot: step back one at a time
            g = 1
            while g == 1:
                ys = (ys * ys + c) % n
                g = math.gcd(abs(x - ys), n)
        if g != n:
            return g
    raise AssertionError("unreachable")


def prime_factors(n: int) -> dict[int, int]:
    """n >= 1 as {prime: exponent}: trial division below 1000, then Pollard's rho, so an
    extent near 2**62 factors in milliseconds (trial division up to sqrt(n) took minutes)."""
    out: dict[int, int] = {}
    for p in range(2, 1000):
        while n % p == 0:
            out[p], n = out.get(p, 0) + 1, n // p
    stack = [n] if n > 1 else []
    while stack:
        m = stack.pop()
        if _is_prime(m):
            out[m] = out.get(m, 0) + 1
        else:
            f = _factor(m)
            stack += [f, m // f]
    return out


def divisors(n: int) -> list[int]:
    """The divisors of n >= 1 in increasing order, from its prime factors."""
    out = [1]
    for p, e in prime_factors(n).items():
        out = [d * p**k for d in out for k in range(e + 1)]
    return sorted(out)


def _inner_factors(
    choices: Sequence[int], n: int, bound: int, dividing: bool
) -> Iterator[tuple[tuple[int, ...], int]]:
    """The n-tuples of `choices` (in itertools.product's order) whose product stays within
    `bound` (and, if `dividing`, divides it), with that product. A prefix that breaks the rule
    is not extended, so the work follows the tuples kept, not len(choices) ** n."""

    def extend(prefix: tuple[int, ...], prod: int) -> Iterator[tuple[tuple[int, ...], int]]:
        if len(prefix) == n:
            yield prefix, prod
            return
        for c in choices:
            p = prod * c
            if p <= bound and not (dividing and bound % p):
                yield from extend((*prefix, c), p)

    return extend((), 1)


class SplitKnob(Knob):
    """Split one loop of `extent` into `num_outputs` factors (policy: factors, power2, or any:
    every inner size up to max_factor, the last outer part partial where it does not divide)."""

    tag = "sp"

    def __init__(
        self,
        name: str,
        extent: int,
        num_outputs: int,
        policy: str = "factors",
        max_factor: int | None = None,
        filter: Callable[[SplitEntity], bool] | None = None,
    ):
        if num_outputs < 2:
            raise TuningError(f"split {name!r}: num_outputs must be >= 2, got {num_outputs}")
        if not isinstance(extent, int) or isinstance(extent, bool) or extent < 1:
            raise TuningError(f"split {name!r}: the loop's extent must be >= 1, got {extent!r}")
        if policy == "factors":
            bound = extent
            choices = divisors(extent)
        elif policy == "power2":
            bound = 2 ** math.ceil(math.log2(max(extent, 1)))
            choices = [2**p for p in range(bound.bit_length())]
        elif policy == "any":
            if max_factor is None:
                raise TuningError(f"split {name!r}: policy 'any' needs a max_factor")
            bound = extent
            choices = list(range(1, min(extent, max_factor) + 1))
        else:
            raise TuningError(
                f"split {name!r}: policy {policy!r} is not 'factors', 'power2' or 'any'"
            )
        if max_factor is not None:
            choices = [c for c in choices if c <= max_factor]
        self.extent = extent
        candidates = []
        for inner, prod in _inner_factors(choices, num_outputs - 1, bound, policy == "factors"):
            size = (-(-extent // prod), *inner)
            if filter is None or filter(SplitEntity(size)):
                candidates.append(size)
        super().__init__(name, candidates)

    def entity(self, i: int) -> SplitEntity:
        return SplitEntity(self.candidates[i])

    def _feature(self, value: tuple[int, ...]) -> list[float]:
        return [math.log2(f) for f in value]


class ReorderKnob(Knob):
    """Permutations of `n_axes` loops (policy: all, identity, or an explicit candidate list)."""

    tag = "re"

    def __init__(
        self,
        name: str,
        n_axes: int,
        policy: str = "all",
        candidates: Sequence[Sequence[int]] | None = None,
    ):
        if policy == "all":
            perms = list(itertools.permutations(range(n_axes)))
        elif policy == "identity":
            perms = [tuple(range(n_axes))]
        elif policy == "candidate" and candidates:
            perms = [tuple(p) for p in candidates]
        else:
            raise TuningError(
                f"reorder {name!r}: policy {policy!r} needs 'all', 'identity' or "
                "'candidate' with a candidate list"
            )
        super().__init__(name, perms)

    def entity(self, i: int) -> ReorderEntity:
        return ReorderEntity(self.candidates[i])

    def _feature(self, value: tuple[int, ...]) -> list[float]:
        return [float(v) for v in value]


class AnnotateKnob(Knob):
    """Annotation choices per axis; policy like 'try_unroll_vec' means {none, unroll, vec}."""

    tag = "an"

    def __init__(self, name: str, n_axes: int, policy: str):
        words = policy.split("_")
        kinds = [w for w in words if w != "try"]
        unknown = [k for k in kinds if k not in ANNOTATIONS]
        if unknown or not kinds:
            raise TuningError(
                f"annotate {name!r}: policy {policy!r} has unknown kinds "
                f"{unknown}; valid kinds: {ANNOTATIONS[1:]} with optional 'try_'"
            )
        per_axis = (["none"] if "try" in words else []) + kinds
        super().__init__(name, list(itertools.product(per_axis, repeat=n_axes)))

    def entity(self, i: int) -> AnnotateEntity:
        return AnnotateEntity(self.candidates[i])

    def _feature(self, value: tuple[str, ...]) -> list[float]:
        onehot = np.zeros((len(value), len(ANNOTATIONS)), dtype=np.float32)
        onehot[np.arange(len(value)), [ANNOTATIONS.index(a) for a in value]] = 1
        return onehot.ravel().tolist()


class OtherKnob(Knob):
    """`define_knob`: any list of values (unroll depth, a flag, ...)."""

    tag = "ot"

    def entity(self, i: int) -> OtherOptionEntity:
        return OtherOptionEntity(self.candidates[i])

    def _feature(self, value: Any) -> list[float]:
        if isinstance(value, bool | int | float):
            return [float(value)]
        return [float(self.candidates.index(value))]


# ---------------------------------------------------------------------------------- the space
class ConfigSpace:
    """The knobs a template defines (in order), cross-knob filters and the op's FLOP count."""

    def __init__(self) -> None:
        self.knobs: dict[str, Knob] = {}
        self.filters: list[Callable[[ConfigEntity], bool]] = []
        self.flop = 0.0
        self._valid_cache: dict[int, bool] = {}
        self._positions: dict[str, int] = {}

    # -- definition (called by templates while the space is collected) --
    def _add(self, knob: Knob) -> None:
        if knob.name in self.knobs:
            raise TuningError(f"knob {knob.name!r} is defined twice in one template")
        self.knobs[knob.name] = knob

    def define_split(
        self,
        name: str,
        axis: Any,
        num_outputs: int,
        policy: str = "factors",
        max_factor: int | None = None,
        filter: Callable[[SplitEntity], bool] | None = None,
    ) -> None:
        self._add(SplitKnob(name, _extent(axis), num_outputs, policy, max_factor, filter))

    def define_reorder(
        self,
        name: str,
        axes: int | Sequence[Any],
        policy: str = "all",
        candidates: Sequence[Sequence[int]] | None = None,
    ) -> None:
        n = axes if isinstance(axes, int) else len(axes)
        self._add(ReorderKnob(name, n, policy, candidates))

    def define_annotate(self, name: str, axes: int | Sequence[Any], policy: str) -> None:
        self._add(AnnotateKnob(name, axes if isinstance(axes, int) else len(axes), policy))

    def define_knob(self, name: str, candidates: Sequence[Any]) -> None:
        self._add(OtherKnob(name, candidates))

    def multi_filter(self, filter: Callable[[ConfigEntity], bool]) -> None:
        """Constrain several knobs at once; invalid points are skipped when sampled."""
        self.filters.append(filter)

    def add_flop(self, flop: float) -> None:
        self.flop += flop

    def __getitem__(self, name: str) -> Any:
        """While collecting, a template reads each knob's first candidate so it can run on."""
        return self.knobs[name].entity(0)

    # -- indexing --
    @property
    def dims(self) -> np.ndarray:
        return np.array([len(k) for k in self.knobs.values()], dtype=np.int64)

    @property
    def range_length(self) -> int:
        """Number of points before cross-knob filters (the product of knob sizes)."""
        return math.prod(len(k) for k in self.knobs.values())

    def __len__(self) -> int:
        return self.range_length

    def check_size(self) -> None:
        if self.range_length >= MAX_RANGE:
            raise TuningError(
                f"space of {self.range_length:.3e} points exceeds 2^62; "
                "narrow a knob (max_factor, policy) so indices fit int64"
            )

    def digits(self, indices: np.ndarray) -> np.ndarray:
        """Flat indices (n,) -> knob candidate indices (n, n_knobs); first knob varies fastest."""
        rest = np.asarray(indices, dtype=np.int64).copy()
        out = np.empty((rest.size, len(self.knobs)), dtype=np.int64)
        for k, dim in enumerate(self.dims):
            out[:, k] = rest % dim
            rest //= dim
        return out

    def indices(self, digits: np.ndarray) -> np.ndarray:
        """Inverse of `digits`."""
        digits = np.asarray(digits, dtype=np.int64)
        place = np.concatenate([[1], np.cumprod(self.dims)[:-1]]).astype(np.int64)
        return digits @ place

    def position(self, name: str) -> int:
        """Digit position of a knob."""
        if len(self._positions) != len(self.knobs):
            self._positions = {n: j for j, n in enumerate(self.knobs)}
        return self._positions[name]

    def entities(self, indices: np.ndarray) -> list[ConfigEntity]:
        """Many entities at once (digits computed in one vectorized pass)."""
        indices = np.asarray(indices, dtype=np.int64)
        return [
            ConfigEntity(self, i, d)
            for i, d in zip(indices.tolist(), self.digits(indices).tolist(), strict=True)
        ]

    def get(self, index: int) -> ConfigEntity:
        if not 0 <= index < self.range_length:
            raise TuningError(f"config index {index} outside [0, {self.range_length})")
        return ConfigEntity(self, int(index))

    # -- validity and sampling --
    def is_valid(self, index: int) -> bool:
        if not self.filters:
            return True
        index = int(index)
        if index not in self._valid_cache:
            entity = ConfigEntity(self, index)
            self._valid_cache[index] = all(f(entity) for f in self.filters)
        return self._valid_cache[index]

    def valid_mask(self, indices: np.ndarray) -> np.ndarray:
        indices = np.asarray(indices, dtype=np.int64)
        if not self.filters:
            return np.ones(indices.shape, dtype=bool)
        return np.fromiter((self.is_valid(i) for i in indices), bool, indices.size)

    def sample(
        self,
        rng: np.random.Generator,
        n: int,
        exclude: set[int] | frozenset = frozenset(),
        max_tries: int = 64,
    ) -> np.ndarray:
        """Up to n distinct valid indices not in `exclude` (fewer only if the space runs out)."""
        self.check_size()
        chosen: dict[int, None] = {}
        for _ in range(max_tries):
            need = n - len(chosen)
            if need <= 0:
                break
            cand = rng.integers(0, self.range_length, size=2 * need + 8)
            cand = cand[self.valid_mask(cand)]
            for c in cand.tolist():
                if c not in exclude and c not in chosen:
                    chosen[c] = None
                    if len(chosen) == n:
                        break
        return np.fromiter(chosen, np.int64, len(chosen))

    def random_walk(self, rng: np.random.Generator, digits: np.ndarray) -> np.ndarray:
        """Each row with one knob (of size > 1) moved to a different candidate."""
        dims = self.dims
        movable = np.flatnonzero(dims > 1)
        if movable.size == 0:
            return digits.copy()
        out = digits.copy()
        rows = np.arange(len(digits))
        knob = movable[rng.integers(0, movable.size, size=len(digits))]
        step = rng.integers(1, dims[knob])
        out[rows, knob] = (digits[rows, knob] + step) % dims[knob]
        return out

    # -- features and records --
    def knob_features(self, digits: np.ndarray) -> np.ndarray:
        """Flattened knob features of many configs: each knob's table gathered by its digit."""
        digits = np.asarray(digits, dtype=np.int64)
        return np.concatenate(
            [k.features[digits[:, j]] for j, k in enumerate(self.knobs.values())], axis=1
        )

    def from_json(self, knobs: dict[str, Any]) -> ConfigEntity:
        """The entity whose knob values are `knobs` (as stored in records)."""
        if set(knobs) != set(self.knobs):
            raise TuningError(
                f"record knobs {sorted(knobs)} do not match the space's {sorted(self.knobs)}"
            )
        digits = [[k.index_of(knobs[name]) for name, k in self.knobs.items()]]
        return self.get(int(self.indices(np.array(digits))[0]))

    def __repr__(self) -> str:
        parts = ", ".join(f"{n}:{k.tag}[{len(k)}]" for n, k in self.knobs.items())
        return f"ConfigSpace({parts}; {self.range_length} points)"


class ConfigEntity:
    """One point of a space. Templates call it like the space: define_* are no-ops then."""

    def __init__(self, space: ConfigSpace, index: int, digits: Sequence[int] | None = None):
        self.space = space
        self.index = index
        if digits is None:
            digits, rest = [], index
            for knob in space.knobs.values():
                rest, d = divmod(rest, len(knob))
                digits.append(d)
        self._digits = [int(d) for d in digits]

    def __getitem__(self, name: str) -> Any:
        return self.space.knobs[name].entity(self._digits[self.space.position(name)])

    def _noop(self, *args: Any, **kwargs: Any) -> None:
        """Knobs are already defined by the space."""

    define_split = define_reorder = define_annotate = define_knob = multi_filter = _noop
    add_flop = _noop

    @property
    def flop(self) -> float:
        return self.space.flop

    @property
    def digits(self) -> np.ndarray:
        return np.array(self._digits, dtype=np.int64)

    def to_json(self) -> dict[str, Any]:
        """Knob values by name: how records store a config (independent of knob order)."""
        return {
            n: k.to_json(int(d))
            for (n, k), d in zip(self.space.knobs.items(), self._digits, strict=True)
        }

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ConfigEntity)
            and other.space is self.space
            and other.index == self.index
        )

    def __hash__(self) -> int:
        return hash(self.index)

    def __repr__(self) -> str:
        return f"ConfigEntity({self.index}, {self.to_json()})"


class FallbackConfigEntity(ConfigEntity):
    """The config used when no record exists: every knob at its first (plain) candidate."""

    def __init__(self, space: ConfigSpace):
        start = 0
        while not space.is_valid(start) and start + 1 < space.range_length:
            start += 1
        super().__init__(space, start)
