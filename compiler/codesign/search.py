"""Searching the hardware space: exhaustive grid, random, and learned (a surrogate of the
compiled network's cycles and energy guides which points to evaluate).

Every strategy evaluates only points the resource model says fit the part (milliseconds a
point), so evaluations -- a compile and a timing run each -- go to candidates for the front.
The learned search starts from a prior, the compiler's own cycle estimate of the network at
each point (`Study.prior`, a tenth of a second a point), and fits a bootstrap ensemble of
XGBoost regressors on the evaluated points' features (`Point.features` and the prior) to what
the prior misses (log cycles minus log prior; log energy), and picks, a batch at a time, the
points whose optimistic prediction (mean minus one spread) adds the most hypervolume to the
front; latency is predicted cycles over the clock the resource model gives the point.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable

import numpy as np

from hw.resources import Resources, load_model

from ..errors import CompilerError
from ..tune.pool import LocalPool
from .evaluate import Evaluation, closing, evaluate_point
from .pareto import front, hypervolume
from .ranker import MIN_SAMPLES, Ranker
from .space import HardwareSpace, Point
from .store import Store

STRATEGIES = ("learned", "random", "grid")
OBJECTIVES = ("latency", "board", "edp")
POINT_TIMEOUT = 900.0  # seconds for one point's compile and timing on a worker
MAX_ROWS = 50_000  # the ranker trains on the most recent timed candidates


def objectives(ev: Evaluation, objective: str) -> tuple[float, float] | None:
    """(the objective, LUTs) of a point that compiled and fits; None otherwise. Objectives:
    `latency` of the offloaded work, `board` (one inference on the board, CPU layers
    included), `edp` (energy-delay product of the offloaded work)."""
    if not ev.ok or ev.cycles is None:
        return None
    value = {"latency": ev.latency_ms, "board": ev.board_ms, "edp": ev.edp}[objective]
    return None if value is None else (value, float(ev.lut))


@dataclasses.dataclass
class Study:
    """One search's setting: the model, part, calibration, knob candidates and base preset;
    where points are evaluated (`pool`: `map(fn, jobs, timeout)`, a `LocalPool` or `DaskPool`)
    and stored."""

    model: str
    space: HardwareSpace
    store: Store
    key: str
    objective: str = "latency"
    calibration: str | None = None
    candidates: int = 8
    pool: object | None = None
    progress: Callable[[Evaluation], None] | None = None
    transfer: bool = True
    ranked_candidates: int = 3
    min_samples: int = MIN_SAMPLES
    ranker: Ranker | None = None
    prior: Callable[[Point], float] | None = None  # estimated cycles (inf: no tiling fits)
    cpu_prior: Callable[[Point], float] | None = None  # the board's CPU layers, ms (`board`)
    _rows: list = dataclasses.field(default_factory=list, repr=False)
    _resources: dict = dataclasses.field(default_factory=dict, repr=False)
    _model: dict = dataclasses.field(default_factory=load_model, repr=False)

    def evaluate(self, points: list[Point]) -> list[Evaluation]:
        """The points' evaluations: stored ones read back, the others run in the pool (a
        point whose job fails is an evaluation with its error) and stored. With `transfer`,
        once `min_samples` candidates have been timed, a learned ranker trained on them picks
        each new point's `ranked_candidates` (`ranker.Ranker`)."""
        found = {p: self.store.get(self.key, p.label) for p in points}
        todo = [p for p, ev in found.items() if ev is None]
        part = self.space.part.name
        candidates = self.candidates if self.ranker is None else self.ranked_candidates
        jobs = [(self.model, p, part, self.calibration, candidates, None, None, self.ranker)
                for p in todo]  # fmt: skip
        if self.pool is None:
            self.pool = LocalPool()
        outcomes = self.pool.map(evaluate_point, jobs, POINT_TIMEOUT)
        for p, outcome in zip(todo, outcomes, strict=True):
            ev = outcome.value if outcome.ok else _failed(self.space, p, outcome.message)
            self.store.put(self.key, ev)
            found[p] = ev
        for p in points:
            if self.progress is not None:
                self.progress(found[p])
        self._learn([found[p] for p in points])
        return [found[p] for p in points]

    def _learn(self, evaluations: list[Evaluation]) -> None:
        """Add the evaluations' timed candidates to the ranker's data and retrain it."""
        self._rows = [*self._rows, *(r for ev in evaluations for r in ev.samples or [])]
        self._rows = self._rows[-MAX_ROWS:]
        if self.transfer and len(self._rows) >= self.min_samples:
            self.ranker = Ranker.fit(self._rows)

    def resources(self, point: Point) -> Resources:
        """The resource model's estimate of `point` at the clock its Fmax gives it (cached:
        a search asks for thousands)."""
        if point not in self._resources:
            self._resources[point] = closing(self.space, point, model=self._model)[1]
        return self._resources[point]

    def fits(self, point: Point) -> bool:
        """Whether the resource model says `point` fits the part (at its estimated Fmax)."""
        return self.resources(point).fits


def _failed(space: HardwareSpace, point: Point, message: str) -> Evaluation:
    """The evaluation of a point whose job raised, hung or died."""
    cfg = space.config(point)
    last = [line for line in message.strip().splitlines() if line.strip()] or ["failed"]
    return Evaluation(point, cfg.to_dict(), False, 0, 0, 0, 0, {}, 0.0, cfg.clock_mhz,
                      error=last[-1][:300])  # fmt: skip


def candidates(study: Study, limit: int, rng: np.random.Generator) -> list[Point]:
    """Up to `limit` distinct points of the space that fit, drawn at random (all of them,
    in grid order, when the space holds fewer)."""
    grid = list(study.space.grid())
    if len(grid) > 2 * limit:  # a sample, twice the limit (not every point fits)
        grid = [grid[i] for i in sorted(rng.choice(len(grid), limit * 2, replace=False))]
    fitting = [p for p in grid if study.fits(p)]
    if len(fitting) > limit:
        fitting = [fitting[i] for i in sorted(rng.choice(len(fitting), limit, replace=False))]
    return fitting


def grid_search(study: Study, batch: int = 8) -> list[Evaluation]:
    """Every fitting point of the space, `batch` at a time (each batch stored as it ends, so
    a stopped grid resumes)."""
    points = [p for p in study.space.grid() if study.fits(p)]
    return [
        ev for k in range(0, len(points), batch) for ev in study.evaluate(points[k : k + batch])
    ]


def random_search(study: Study, trials: int, seed: int, batch: int = 2) -> list[Evaluation]:
    """`trials` distinct fitting points drawn uniformly, evaluated `batch` at a time."""
    rng = np.random.default_rng(seed)
    pool = candidates(study, 4000, rng)
    order = rng.permutation(len(pool))[:trials]
    out: list[Evaluation] = []
    for k in range(0, len(order), batch):
        out += study.evaluate([pool[i] for i in order[k : k + batch]])
    return out


class Surrogate:
    """A bootstrap ensemble of XGBoost regressors from point features to a log quantity."""

    def __init__(self, members: int = 5, seed: int = 0):
        self.members, self.seed = members, seed
        self.models: list = []

    def fit(self, x: np.ndarray, y: np.ndarray) -> Surrogate:
        import xgboost as xgb

        rng = np.random.default_rng(self.seed)
        params = {"max_depth": 3, "eta": 0.2, "objective": "reg:squarederror", "nthread": 1}
        self.models = []
        for m in range(self.members):
            rows = rng.integers(len(x), size=len(x)) if m else np.arange(len(x))
            data = xgb.DMatrix(x[rows], label=y[rows])
            self.models.append(xgb.train({**params, "seed": self.seed + m}, data, 60))
        return self

    def predict(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and spread of the members' predictions."""
        import xgboost as xgb

        data = xgb.DMatrix(x)
        preds = np.stack([m.predict(data) for m in self.models])
        return preds.mean(axis=0), preds.std(axis=0)


def _reference(values: Iterable[tuple[float, float]], lut_capacity: float) -> tuple[float, float]:
    """A hypervolume reference point: 10% beyond the worst objective seen, the part's LUTs."""
    worst = max((v[0] for v in values), default=1.0)
    return worst * 1.1, lut_capacity


PRIOR_POOL = 1000  # the candidates a learned search considers (their priors take 0.1 s each)


def learned_search(
    study: Study, trials: int, seed: int, batch: int = 2, initial: int | None = None
) -> list[Evaluation]:
    """`trials` evaluations in batches chosen by the optimistic hypervolume improvement from
    `study.prior` on; for EDP (energy has no prior), `initial` random points first."""
    if study.prior is None:
        raise CompilerError("a learned co-design search needs a prior (Study.prior)")
    rng = np.random.default_rng(seed)
    estimates = {p: study.prior(p) for p in candidates(study, PRIOR_POOL, rng)}
    prior = {p: math.log(c) for p, c in estimates.items() if math.isfinite(c)}  # else no tiling
    pool = list(prior)
    if not pool:
        raise CompilerError(f"no point of the space fits {study.space.part.name}")
    if study.objective == "board" and study.cpu_prior is None:
        raise CompilerError("a learned search of the board latency needs Study.cpu_prior")
    cpu = {p: study.cpu_prior(p) for p in pool} if study.objective == "board" else None
    default = 0 if study.objective != "edp" else max(batch, min(8, trials // 4))
    initial = min(trials, default if initial is None else initial)
    order = list(rng.permutation(len(pool)))
    done: list[Evaluation] = []
    for k in range(0, initial, batch):
        done += study.evaluate([pool[i] for i in order[k : min(k + batch, initial)]])
    clocks = {p: study.resources(p).clock_mhz for p in pool}
    luts = {p: float(study.resources(p).lut) for p in pool}
    while len(done) < trials:
        seen = {ev.point for ev in done}
        left = [p for p in pool if p not in seen]
        if not left:
            break
        count = min(batch, trials - len(done))
        picks = _propose(study, done, left, clocks, luts, prior, cpu, count, rng)
        done += study.evaluate(picks)
    return done


def _predicted_log_cycles(
    done: list[Evaluation], left: list[Point], prior: dict, seed: int
) -> np.ndarray:
    """Each of `left`'s log cycles, optimistic (mean minus one spread): the prior plus a
    surrogate of what it missed at the compiled points (their mean miss below three)."""
    compiled = [ev for ev in done if ev.cycles is not None and ev.point in prior]
    base = np.array([prior[p] for p in left])
    misses = np.array([math.log(ev.cycles) - prior[ev.point] for ev in compiled])
    if len(compiled) < 3:
        return base + (misses.mean() if len(misses) else 0.0)

    def rows(points: list[Point]) -> np.ndarray:
        return np.array([[*p.features(), prior[p]] for p in points])

    mean, spread = (
        Surrogate(seed=seed).fit(rows([ev.point for ev in compiled]), misses).predict(rows(left))
    )
    return base + mean - spread


def _propose(study: Study, done: list[Evaluation], left: list[Point], clocks: dict,
             luts: dict, prior: dict, cpu: dict | None, count: int,
             rng: np.random.Generator) -> list[Point]:  # fmt: skip
    """The `count` points of `left` with the largest optimistic hypervolume improvement (a
    random one where none promises a gain: always taking the fastest predicted point there
    left the low-LUT end of the front unvisited); `cpu`: each point's CPU layers' time on the
    board, added for the `board` objective."""
    seed = int(rng.integers(1 << 31))
    compiled = [ev for ev in done if ev.cycles is not None]
    if study.objective == "edp" and len(compiled) < 3:
        return left[:count]  # too little to learn energy from
    log_cycles = _predicted_log_cycles(done, left, prior, seed)
    latency = np.exp(log_cycles) / (np.array([clocks[p] for p in left]) * 1e3)
    primary = latency if cpu is None else latency + np.array([cpu[p] for p in left])
    if study.objective == "edp":
        x = np.array([ev.point.features() for ev in compiled])
        xs = np.array([p.features() for p in left])
        ys = np.log([ev.energy_mj for ev in compiled])
        e_mean, e_spread = Surrogate(seed=seed + 1).fit(x, ys).predict(xs)
        primary = latency * np.exp(e_mean - e_spread)
    current = [v for v in (objectives(ev, study.objective) for ev in done) if v is not None]
    reference = _reference(current or [(float(primary.max()), 0.0)], study.space.part.lut)
    base = hypervolume(current, reference)
    picks: list[Point] = []
    chosen: set[int] = set()
    for _ in range(count):
        gains = [
            -math.inf
            if i in chosen
            else hypervolume([*current, (primary[i], luts[p])], reference) - base
            for i, p in enumerate(left)
        ]
        best = int(np.argmax(gains))
        if gains[best] <= 0:  # nothing promises a gain: explore, a point drawn at random
            rest = [i for i in range(len(left)) if i not in chosen]
            best = int(rng.choice(rest))
        chosen.add(best)
        current.append((float(primary[best]), luts[left[best]]))
        base = hypervolume(current, reference)
        picks.append(left[best])
    return picks


def pareto(evaluations: list[Evaluation], objective: str) -> list[Evaluation]:
    """The evaluations on the front of (objective, LUTs), fastest first."""
    scored = [(ev, v) for ev in evaluations if (v := objectives(ev, objective)) is not None]
    return [scored[i][0] for i in front([v for _, v in scored])]
