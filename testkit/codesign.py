"""A stand-in for compiling and timing design points: `SyntheticPool` answers a co-design
search's jobs with evaluations of a known cost (`synthetic_cycles`) and the resource model's
estimate, so the searches and their benchmark can be checked in seconds."""

from __future__ import annotations

import math

from compiler.codesign.evaluate import Evaluation
from compiler.codesign.space import HardwareSpace, Point
from compiler.tune.pool import Outcome
from hw.resources import estimate


def synthetic_cycles(point: Point) -> int:
    """Cycles that fall with the GEMM's MACs, with deeper buffers (fewer reloads), a deeper
    micro-op buffer and a wider bus: one point is the fastest."""
    macs = point.batch * point.block * point.block
    depth = point.inp_depth + 1.1 * point.wgt_depth + 1.2 * point.acc_depth
    uop, bus = 1 + 0.05 * (13 - point.uop_depth), 1 + 0.1 * (point.bus == 64)
    return int(2e7 / macs * (1 + 4 * math.exp(-(depth - 27) / 2)) * uop * bus)


class SyntheticPool:
    """Answers each job (model, point, part, ...) with a synthetic evaluation at 150 MHz."""

    n_workers = 2

    def __init__(self, space: HardwareSpace):
        self.space, self.jobs = space, 0

    def map(self, fn, jobs, timeout):
        self.jobs += len(jobs)
        return [Outcome(self.evaluation(job[1])) for job in jobs]

    def evaluation(self, point: Point) -> Evaluation:
        cfg = self.space.config(point, 150.0)
        res = estimate(cfg, self.space.part)  # the LUTs the search predicts with
        cycles = synthetic_cycles(point)
        return Evaluation(point, cfg.to_dict(), True, res.lut, res.ff, res.bram36, res.dsp,
                          res.utilisation, 160.0, 150.0, cycles, {"c": cycles}, cycles * 1e-6,
                          1)  # fmt: skip
