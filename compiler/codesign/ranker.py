"""A learned knob ranker that transfers between design points: an XGBoost model of a layer's
cycles from the hardware's parameters, the layer's shape, the knob setting and the analytic
cycle estimate, trained on every candidate the search has timed at earlier points
(`graph.accel.timed_candidates`). A new point then times only the few candidates the model puts
first (`graph.accel.choose_knobs`' `rank`), instead of the estimate's longer list.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from vta.config import VTAConfig
from vta.isa import MemType

from ..topi.vta.conv2d import Conv2DKnobs, Conv2DWorkload
from ..topi.vta.fused import Epilogue, estimate_cycles, estimate_space

MIN_SAMPLES = 200  # fewer timed candidates train no ranker


def _log(x: float) -> float:
    return math.log2(max(x, 1))


def knob_row(
    wl: Conv2DWorkload, ep: Epilogue, k: Conv2DKnobs, cfg: VTAConfig, estimate: float | None = None
) -> list[float]:
    """The features of one candidate: hardware (GEMM shape, buffer depths, bus, ALU, DRAM
    latency), layer (shape, epilogue), knobs (tiles, virtual threads) and the log estimate
    (`estimate_cycles`, unless given)."""
    if estimate is None:
        estimate = estimate_cycles(wl, k, ep, cfg)
    d = cfg.log_depth
    depths = [d[m] for m in (MemType.INP, MemType.WGT, MemType.ACC, MemType.UOP)]
    hardware = [cfg.log_batch, cfg.log_block, cfg.log2_block_out, *depths, cfg.log_bus_width,
                cfg.alu_requant, _log(cfg.dram_latency)]  # fmt: skip
    layer = [_log(v) for v in (wl.n, wl.ci, wl.h, wl.w, wl.co, wl.kh, wl.stride)]
    layer += [ep.residual_shift is not None, ep.shortcut is not None]
    tiles = [_log(v) for v in (k.tile_b, k.tile_h, k.tile_w, k.tile_ci, k.tile_co)]
    tiles += [k.oc_nthread, k.h_nthread]
    return [*map(float, hardware), *layer, *tiles, _log(estimate)]


def sample_rows(timed: Sequence[tuple]) -> list[list[float]]:
    """`(wl, ep, knobs, cfg, cycles)` candidates as rows: `knob_row` then the cycles."""
    return [[*knob_row(wl, ep, k, cfg), float(c)] for wl, ep, k, cfg, c in timed]


class Ranker:
    """Predicted log2 cycles of knob settings; a `graph.accel.Rank`."""

    def __init__(self, booster):
        self.booster = booster

    @classmethod
    def fit(cls, rows: Sequence[Sequence[float]], seed: int = 0) -> Ranker:
        """Train on `sample_rows` rows (features, then cycles)."""
        import xgboost as xgb

        data = np.asarray(rows, dtype=np.float64)
        x, y = data[:, :-1], np.log2(np.maximum(data[:, -1], 1))
        params = {"max_depth": 6, "eta": 0.1, "objective": "reg:squarederror", "nthread": 1,
                  "seed": seed}  # fmt: skip
        return cls(xgb.train(params, xgb.DMatrix(x, label=y), 200))

    def __call__(
        self, wl: Conv2DWorkload, ep: Epilogue, cfg: VTAConfig, space: Sequence[Conv2DKnobs]
    ) -> list[float]:
        import xgboost as xgb

        if not space:
            return []
        estimates = estimate_space(wl, ep, cfg).tolist()  # `space` is the whole knob space
        pairs = zip(space, estimates, strict=True)
        rows = np.array([knob_row(wl, ep, k, cfg, e) for k, e in pairs])
        return self.booster.predict(xgb.DMatrix(rows)).tolist()
