"""The timing contract of docs/timing.md as pure functions of (instruction, configuration).

Every cycle formula shared by the cycle simulator and the RTL lives in this file, so calibrating
one against the other touches nothing else. Where docs/timing.md is terse, these conventions hold
for both sides:

- An event that occupies cycle t is visible from cycle t + 1 (`HANDOFF_CYCLES`): an instruction
  whose last bytes arrive in beat cycle t is dispatched at t + 1 at the earliest and can start
  one cycle after its dispatch; a command or token queue slot freed by a start (pop) in cycle s
  is reusable at s + 1. A token pushed by an instruction ending at cycle e is poppable at e.
- A read burst stays outstanding through its last data beat: the next request may issue in the
  cycle after it. A write burst stays outstanding through its response; its first beat leaves
  in the cycle after its request. So a write stream takes exactly as long as a read stream of
  the same bursts with one more cycle of latency (`WRITE_EXTRA_LATENCY`), and a store ends in
  the cycle after its last response.
- The instruction stream starts at a 4 KiB-aligned DRAM address, and fetch reads all of it
  without back-pressure (its read buffer is not bounded).
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache

import numpy as np

from vta.config import VTAConfig
from vta.errors import ISAError
from vta.isa import (
    INSN_BYTES,
    LOAD_ROUTES,
    STORE_TYPES,
    AluInsn,
    FinishInsn,
    GemmInsn,
    Insn,
    MemInsn,
)

PAGE_BYTES = 4096  # AXI bursts never cross a 4 KiB boundary
DECODE_CYCLES = 1
WRITE_EXTRA_LATENCY = 1  # a write's first beat leaves the cycle after its request
HANDOFF_CYCLES = 1  # an event in cycle t (last byte, dispatch, pop) is seen elsewhere from t + 1


@dataclasses.dataclass(frozen=True)
class Cost:
    """Cycles of one instruction: `busy` doing work, `stall_dram` waiting on DRAM."""

    busy: int
    stall_dram: int = 0

    @property
    def cycles(self) -> int:
        return self.busy + self.stall_dram


# ------------------------------------------------------------------------------- DRAM / AXI
def burst_beats(row_starts: np.ndarray, row_bytes: int, cfg: VTAConfig) -> np.ndarray:
    """Beats of each burst of a transfer whose rows are bytes [start, start + row_bytes).

    Each row touches the bus words floor(start / bus_bytes) .. floor((start + row_bytes - 1) /
    bus_bytes), split greedily into bursts of at most `max_burst_beats` that never cross a 4 KiB
    page; the rows' bursts form one stream in row order.
    """
    starts = np.asarray(row_starts, dtype=np.int64).reshape(-1)
    if row_bytes <= 0 or starts.size == 0:
        return np.zeros(0, dtype=np.int64)
    bus, page_words = cfg.bus_bytes, PAGE_BYTES // cfg.bus_bytes
    first = starts // bus
    last = (starts + row_bytes - 1) // bus
    # Split each row at its page boundaries into segments.
    pages = last // page_words - first // page_words + 1
    seg_row = np.repeat(np.arange(starts.size), pages)
    seg_page = first[seg_row] // page_words + _ramp(pages)
    seg_first = np.maximum(first[seg_row], seg_page * page_words)
    seg_last = np.minimum(last[seg_row], seg_page * page_words + page_words - 1)
    seg_words = seg_last - seg_first + 1
    # Split each segment into bursts of max_burst_beats, the last one shorter.
    most = cfg.max_burst_beats
    bursts = -(-seg_words // most)
    left = np.repeat(seg_words, bursts) - _ramp(bursts) * most
    return np.minimum(left, most)


def _ramp(counts: np.ndarray) -> np.ndarray:
    """0, 1, .., c - 1 for each c in `counts`, concatenated."""
    total = int(counts.sum())
    offsets = np.repeat(np.cumsum(counts) - counts, counts)
    return np.arange(total, dtype=np.int64) - offsets


def burst_ends(beats: np.ndarray, cfg: VTAConfig, write: bool = False) -> np.ndarray:
    """For each burst of a stream whose first request issues in cycle 0, the cycle after its
    last read beat, or after its write response.

    With latency L and O outstanding bursts, burst i's data starts at max(end[i-1],
    end[i-O] + L): the data channel is in order, and request i waits for burst i-O to retire
    (requests at one per cycle never bind, since a burst carries at least one beat). A write
    stream is the same with L + 1, its end times read as the cycle after each response.
    """
    latency = cfg.dram_latency + (WRITE_EXTRA_LATENCY if write else 0)
    window = cfg.max_outstanding
    ends = latency + np.cumsum(np.asarray(beats, dtype=np.int64))
    if ends.size <= window:
        return ends
    # Back to back until a burst's window-th predecessor retires too late to cover the latency.
    late = np.flatnonzero(ends[:-window] + latency > ends[window - 1 : -1])
    if late.size == 0:
        return ends
    out = ends.tolist()
    b = np.diff(ends, prepend=latency).tolist()
    for i in range(int(late[0]) + window, len(out)):
        out[i] = b[i] + max(out[i - 1], out[i - window] + latency)
    return np.asarray(out, dtype=np.int64)


@lru_cache(maxsize=4096)
def _stream(
    start_in_page: int,
    row_bytes: int,
    stride_in_page: int,
    rows: int,
    write: bool,
    cfg: VTAConfig,
) -> Cost:
    """Cost of a 2-D transfer; it depends on the addresses only through their page offsets."""
    starts = start_in_page + stride_in_page * np.arange(rows, dtype=np.int64)
    beats = burst_beats(starts, row_bytes, cfg)
    if beats.size == 0:
        return Cost(0)
    total = int(beats.sum())
    return Cost(busy=total, stall_dram=int(burst_ends(beats, cfg, write)[-1]) - total)


def transfer_cost(
    dram_byte: int,
    row_bytes: int,
    stride_bytes: int,
    rows: int,
    cfg: VTAConfig,
    write: bool = False,
) -> Cost:
    """Cycles to read (or write) `rows` rows of `row_bytes` bytes, `stride_bytes` apart, from
    `dram_byte`: `busy` counts data beats, `stall_dram` the latency and gaps."""
    return _stream(dram_byte % PAGE_BYTES, row_bytes, stride_bytes % PAGE_BYTES, rows, write, cfg)


def fetch_arrivals(n_insns: int, cfg: VTAConfig) -> np.ndarray:
    """First cycle in which fetch may dispatch each instruction: the cycle after the beat that
    completes its 16 bytes, with the whole stream read from cycle 0."""
    beats = burst_beats(np.zeros(1, dtype=np.int64), n_insns * INSN_BYTES, cfg)
    ends = burst_ends(beats, cfg)
    first_word = np.cumsum(beats) - beats
    data_start = ends - beats
    last_word = (np.arange(n_insns, dtype=np.int64) * INSN_BYTES + INSN_BYTES - 1) // cfg.bus_bytes
    burst = np.searchsorted(first_word, last_word, side="right") - 1
    return data_start[burst] + (last_word - first_word[burst]) + HANDOFF_CYCLES


# ------------------------------------------------------------------------------- instructions
def pad_elements(insn: MemInsn) -> int:
    """Zero elements a LOAD writes around its data (one per cycle)."""
    width = insn.x_pad_0 + insn.x_size + insn.x_pad_1
    return (insn.y_pad_0 + insn.y_pad_1) * width + insn.y_size * (insn.x_pad_0 + insn.x_pad_1)


def mem_cost(insn: MemInsn, cfg: VTAConfig) -> Cost:
    """LOAD: decode + padding + read stream; STORE: decode + write stream; NOP: 1 cycle."""
    if insn.is_nop:
        return Cost(DECODE_CYCLES)
    if insn.is_store:
        if insn.memory_type not in STORE_TYPES:
            raise ISAError(
                f"STORE field 'memory_type' = {insn.memory_type.name} "
                f"(valid: {', '.join(m.name for m in STORE_TYPES)})"
            )
        elem, pad = cfg.elem_bytes[insn.memory_type], 0
    else:
        if insn.memory_type not in LOAD_ROUTES:
            raise ISAError(
                f"LOAD field 'memory_type' = {insn.memory_type.name} is not loadable "
                f"(valid: {', '.join(m.name for m in LOAD_ROUTES)})"
            )
        elem, pad = cfg.elem_bytes[insn.memory_type], pad_elements(insn)
    stream = transfer_cost(
        insn.dram_base * elem,
        insn.x_size * elem,
        insn.x_stride * elem,
        insn.y_size,
        cfg,
        write=insn.is_store,
    )
    return Cost(DECODE_CYCLES + pad + stream.busy, stream.stall_dram)


def gemm_cost(insn: GemmInsn, cfg: VTAConfig) -> Cost:
    """Decode, one micro-op per cycle, then the GEMM pipeline drains."""
    return Cost(DECODE_CYCLES + insn.uop_count + cfg.gemm_pipeline_depth)


def alu_cost(insn: AluInsn, cfg: VTAConfig) -> Cost:
    """Decode, one micro-op per issue interval (immediate or tensor), then the pipeline drains."""
    interval = cfg.alu_ii_imm if insn.use_imm else cfg.alu_ii_tensor
    return Cost(DECODE_CYCLES + insn.uop_count * interval + cfg.alu_pipeline_depth)


@lru_cache(maxsize=1 << 16)
def insn_cost(insn: Insn, cfg: VTAConfig) -> Cost:
    """Cycles from an instruction's start to its end (before any push into a full queue)."""
    if isinstance(insn, MemInsn):
        return mem_cost(insn, cfg)
    if isinstance(insn, GemmInsn):
        return gemm_cost(insn, cfg)
    if isinstance(insn, AluInsn):
        return alu_cost(insn, cfg)
    if isinstance(insn, FinishInsn):
        return Cost(DECODE_CYCLES)
    raise ISAError(f"not an instruction: {insn!r}")
