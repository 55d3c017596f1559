"""A stand-in for compiling and timing design points: `SyntheticPool` answers a co-design
search's jobs with evaluations of a known cost (`synthetic_cycles`) and the resource model's
estimate, so the searches and their benchmark can be checked in seconds."""

from __future__ import annotations

import math
import zlib

from compiler.codesign.evaluate import Evaluation, closing
from compiler.codesign.space import HardwareSpace, Point
from compiler.tune.pool import Outcome


def synthetic_cycles(point: Point) -> int:
    """Cycles that fall with the GEMM's MACs, with deeper buffers (fewer reloads), a deeper
    micro-op buffer and a wider bus: one point is the fastest."""
    macs = point.batch * point.block * point.block_out
    depth = point.inp_depth + 1.1 * point.wgt_depth + 1.2 * point.acc_depth
    uop, bus = 1 + 0.05 * (13 - point.uop_depth), 1 + 0.1 * (point.bus == 64)
    return int(2e7 / macs * (1 + 4 * math.exp(-(depth - 27) / 2)) * uop * bus)


def synthetic_cpu_ms(point: Point) -> float:
    """CPU layers' time on the board that grows with the block (a wider block pads a thin
    layer more, and the partition leaves more of them to the CPU), against the accelerator's
    time that falls with it: what `evaluate.network_cpu_prior` models for a real network."""
    return 1.5 * point.block / 8


def synthetic_prior(point: Point) -> float:
    """`synthetic_cycles` missed as the compiler's estimate (`evaluate.network_prior`) misses
    the simulator's cycles: by a factor that depends on the GEMM shape (0.8-1.2) and by up to
    3% more either way, fixed per point."""
    shape = 0.8 + 0.1 * math.log2(point.block * point.block_out // 64) + 0.1 * (point.batch > 1)
    wobble = math.sin(zlib.crc32(point.label.encode()) % 1000)
    return synthetic_cycles(point) * shape * (1 + 0.03 * wobble)


class SyntheticPool:
    """Answers each job (model, point, part, ...) with a synthetic evaluation at the clock
    the resource model gives the point."""

    n_workers = 2

    def __init__(self, space: HardwareSpace):
        self.space, self.jobs = space, 0

    def map(self, fn, jobs, timeout):
        self.jobs += len(jobs)
        return [Outcome(self.evaluation(job[1])) for job in jobs]

    def evaluation(self, point: Point) -> Evaluation:
        cfg, res = closing(self.space, point)  # what the search predicts with
        cycles = synthetic_cycles(point)
        board = cycles / (cfg.clock_mhz * 1e3) + synthetic_cpu_ms(point)
        return Evaluation(point, cfg.to_dict(), res.fits, res.lut, res.ff, res.bram36, res.dsp,
                          res.utilisation, res.fmax_mhz, cfg.clock_mhz, cycles, {"c": cycles},
                          cycles * 1e-6, 1, board_ms=board)  # fmt: skip
