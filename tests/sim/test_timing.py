"""sim.timing against docs/timing.md, every expected value worked out by hand (pynq: 8-byte bus,
latency L = 32, bursts of B = 16 beats, O = 4 outstanding), plus per-cycle reference models of the
AXI master for random streams."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.timing import (
    PAGE_BYTES,
    Cost,
    burst_beats,
    burst_ends,
    fetch_arrivals,
    insn_cost,
    pad_elements,
    transfer_cost,
)
from vta.config import VTAConfig
from vta.errors import ISAError
from vta.isa import AluInsn, AluOp, FinishInsn, GemmInsn, MemInsn, MemType

PYNQ = VTAConfig.load("pynq")


def load(mem: MemType, **fields) -> MemInsn:
    return MemInsn(memory_type=mem, y_size=1, **fields)


# ------------------------------------------------------------------------------- bursts
def test_bursts_split_at_max_burst_length():
    # 300 bytes from 0 on an 8-byte bus: words 0..37 = 38 beats = 16 + 16 + 6.
    assert burst_beats(np.array([0]), 300, PYNQ).tolist() == [16, 16, 6]


def test_bursts_never_cross_a_4k_page():
    # Bytes [4090, 4110) touch words 511 (page 0) and 512..513 (page 1).
    assert burst_beats(np.array([4090]), 20, PYNQ).tolist() == [1, 2]


def test_rows_of_a_2d_transfer_form_one_stream():
    # Row 0: words 0..24 -> 16 + 9; row 1 at byte 4000: words 500..524, page break at 512.
    assert burst_beats(np.array([0, 4000]), 200, PYNQ).tolist() == [16, 9, 12, 13]


def test_bursts_follow_the_bus_width():
    wide = VTAConfig.load("ultra96")  # 16-byte bus
    # Bytes [8, 40) touch words 0..2 of 16 bytes.
    assert burst_beats(np.array([8]), 32, wide).tolist() == [3]


def test_back_to_back_bursts_hide_the_latency():
    # Three bursts streamed without gaps: first beat at cycle 32, last at 32 + 38 - 1.
    assert burst_ends(np.array([16, 16, 6]), PYNQ).tolist() == [48, 64, 70]


def test_short_bursts_are_bound_by_outstanding_requests():
    # Ten 2-beat bursts: bursts 0..3 deliver in cycles 32..39. Burst 4 may issue once burst 0
    # retires (cycle 34), so its data arrives at 66..67; bursts 5..7 follow back to back, and
    # burst 8 waits for burst 4 (retired at 68): data at 100..101.
    ends = burst_ends(np.full(10, 2), PYNQ).tolist()
    assert ends == [34, 36, 38, 40, 68, 70, 72, 74, 102, 104]


def test_one_outstanding_request_serializes_bursts():
    # Burst 1 issues at cycle 36, after burst 0's last beat (35): data 68..71.
    serial = PYNQ.replace(max_outstanding=1)
    assert burst_ends(np.array([4, 4]), serial).tolist() == [36, 72]


def test_transfer_cost_splits_beats_from_latency():
    # 2048 bytes = 256 beats in 16 full bursts, back to back after the 32-cycle latency.
    assert transfer_cost(0, 2048, 0, 1, PYNQ) == Cost(busy=256, stall_dram=32)


def test_transfer_cost_depends_only_on_page_offsets():
    for base in (0, 24, 4000):
        assert transfer_cost(base, 200, 1000, 7, PYNQ) == transfer_cost(
            base + 5 * PAGE_BYTES, 200, 1000 + 3 * PAGE_BYTES, 7, PYNQ
        )


# ------------------------------------------------------------------------------- fetch
def test_fetch_gets_one_instruction_per_two_beats():
    # 16-byte instructions on an 8-byte bus: insn k's last beat is at 32 + 2k + 1.
    assert fetch_arrivals(4, PYNQ).tolist() == [34, 36, 38, 40]


def test_fetch_on_a_wide_bus_gets_one_instruction_per_beat():
    assert fetch_arrivals(3, VTAConfig.load("ultra96")).tolist() == [33, 34, 35]


def test_fetch_waits_for_the_next_burst():
    # 9 instructions = 18 words: burst 0 (words 0..15) at 32..47; with one outstanding request
    # burst 1 issues at 48 and delivers words 16..17 at 80..81.
    serial = PYNQ.replace(max_outstanding=1)
    assert fetch_arrivals(9, serial).tolist() == [34, 36, 38, 40, 42, 44, 46, 48, 82]


# ------------------------------------------------------------------------------- LOAD / STORE
def test_nop_takes_one_cycle():
    assert insn_cost(MemInsn(memory_type=MemType.INP), PYNQ) == Cost(1)
    assert insn_cost(MemInsn(is_store=True, memory_type=MemType.OUT), PYNQ) == Cost(1)


def test_load_inp():
    # 4 INP elements x 16 B = 64 B = 8 beats: 1 decode + 8 beats + 32 latency.
    assert insn_cost(load(MemType.INP, x_size=4, x_stride=4), PYNQ) == Cost(busy=9, stall_dram=32)


def test_load_wgt_two_bursts():
    # One 256-byte weight tile = 32 beats = two back-to-back bursts.
    assert insn_cost(load(MemType.WGT, x_size=1, x_stride=1), PYNQ) == Cost(33, 32)


def test_load_uop_unaligned():
    # 3 micro-ops from element 1: bytes [4, 16) = words 0..1, two beats.
    cost = insn_cost(load(MemType.UOP, dram_base=1, x_size=3, x_stride=3), PYNQ)
    assert cost == Cost(busy=3, stall_dram=32)


def test_padded_load():
    # W = 1 + 2 + 1 = 4; pad = y_pad_0 * W + y_size * (x_pad_0 + x_pad_1) = 4 + 2 * 2 = 8.
    # Two rows of 2 INP elements (32 B = 4 beats) 160 B apart: bursts end at 36 and 40.
    insn = MemInsn(
        memory_type=MemType.INP,
        y_size=2,
        x_size=2,
        x_stride=10,
        y_pad_0=1,
        x_pad_0=1,
        x_pad_1=1,
    )
    assert pad_elements(insn) == 8
    assert insn_cost(insn, PYNQ) == Cost(busy=1 + 8 + 8, stall_dram=32)
    assert insn_cost(insn, PYNQ).cycles == 49


def test_load_acc_with_only_padding():
    # y_size 0: no data stream, the padding rows only: 2 rows of width 3.
    insn = MemInsn(memory_type=MemType.ACC, y_size=0, x_size=1, y_pad_0=1, y_pad_1=1, x_pad_0=2)
    assert insn_cost(insn, PYNQ) == Cost(1 + 6)


def test_store_out():
    # 3 rows of one 16-byte OUT element, 1 KiB apart: requests at 0, 1, 2; beats leave at
    # 1-2, 3-4, 5-6; the last response arrives at 6 + 32 = 38, so the stream ends at 39.
    insn = MemInsn(is_store=True, memory_type=MemType.OUT, y_size=3, x_size=1, x_stride=64)
    assert insn_cost(insn, PYNQ) == Cost(busy=1 + 6, stall_dram=33)


def test_write_waits_for_responses_to_free_a_slot():
    # One outstanding write: burst 1 is requested the cycle after burst 0's response (4 + 32 =
    # 36), its beats leave at 38..41 and its response arrives at 73.
    serial = PYNQ.replace(max_outstanding=1)
    assert burst_ends(np.array([4, 4]), serial, write=True).tolist() == [37, 74]


def test_store_other_than_out_is_rejected():
    insn = MemInsn(is_store=True, memory_type=MemType.ACC, y_size=1, x_size=1)
    with pytest.raises(ISAError, match="memory_type.*valid: OUT"):
        insn_cost(insn, PYNQ)


def test_load_acc_8bit_is_rejected():
    with pytest.raises(ISAError, match="ACC_8BIT is not loadable"):
        insn_cost(load(MemType.ACC_8BIT, x_size=1), PYNQ)


# ------------------------------------------------------------------------------- GEMM / ALU
def test_gemm():
    # 1 decode + 2 * 5 * 3 micro-ops + 4 pipeline stages.
    insn = GemmInsn(uop_bgn=2, uop_end=5, iter_out=2, iter_in=5)
    assert insn_cost(insn, PYNQ) == Cost(35)


def test_gemm_follows_the_pipeline_depth():
    insn = GemmInsn(uop_bgn=0, uop_end=1)
    assert insn_cost(insn, PYNQ.replace(gemm_pipeline_depth=9)) == Cost(1 + 1 + 9)


def test_alu_immediate_issues_every_cycle():
    insn = AluInsn(uop_bgn=0, uop_end=3, iter_out=2, iter_in=5, alu_opcode=AluOp.ADD, use_imm=True)
    assert insn_cost(insn, PYNQ) == Cost(1 + 30 * 1 + 4)


def test_alu_tensor_issues_every_other_cycle():
    insn = AluInsn(uop_bgn=0, uop_end=3, iter_out=2, iter_in=5, alu_opcode=AluOp.MAX)
    assert insn_cost(insn, PYNQ) == Cost(1 + 30 * 2 + 4)


def test_finish():
    assert insn_cost(FinishInsn(), PYNQ) == Cost(1)


# ------------------------------------------------------------------------------- reference models
def reference_bursts(starts: list[int], row_bytes: int, cfg: VTAConfig) -> list[int]:
    """Word by word: a burst ends at B beats, at a 4 KiB page boundary, or at the row's end."""
    out = []
    for start in starts:
        run = 0
        for word in range(start // cfg.bus_bytes, (start + row_bytes - 1) // cfg.bus_bytes + 1):
            if run and (run == cfg.max_burst_beats or word * cfg.bus_bytes % PAGE_BYTES == 0):
                out.append(run)
                run = 0
            run += 1
        out.append(run)
    return out


def reference_stream(beats: list[int], cfg: VTAConfig) -> list[int]:
    """Cycle by cycle: one request per cycle while fewer than O bursts are outstanding; the
    data channel delivers one beat per cycle, in request order, L cycles after the request."""
    issued, cycle = [], 0
    data_free, ends = 0, []  # first cycle the data channel is free; cycle after each burst
    while len(ends) < len(beats):
        outstanding = len(issued) - sum(1 for end in ends if end <= cycle)
        if len(issued) < len(beats) and outstanding < cfg.max_outstanding:
            i = len(issued)
            issued.append(cycle)
            first = max(cycle + cfg.dram_latency, data_free)
            data_free = first + beats[i]
            ends.append(data_free)
        cycle += 1
    return ends


def reference_write_stream(beats: list[int], cfg: VTAConfig) -> list[int]:
    """Cycle by cycle: one request per cycle while fewer than O bursts await their response;
    beats leave one per cycle, in order, from the cycle after their request; the response comes
    L cycles after the last beat. Returns the cycle after each response."""
    responses, cycle, data_free = [], 0, 0
    while len(responses) < len(beats):
        unanswered = sum(1 for r in responses if r >= cycle)
        if unanswered < cfg.max_outstanding:
            first = max(cycle + 1, data_free)
            data_free = first + beats[len(responses)]
            responses.append(data_free - 1 + cfg.dram_latency)
        cycle += 1
    return [r + 1 for r in responses]


@settings(max_examples=60, deadline=None)
@given(
    starts=st.lists(st.integers(0, 3 * PAGE_BYTES), min_size=1, max_size=6),
    row_bytes=st.integers(1, 700),
    log_bus=st.integers(3, 7),
    burst=st.sampled_from([1, 2, 4, 16]),
)
def test_bursts_match_word_by_word_split(starts, row_bytes, log_bus, burst):
    cfg = PYNQ.replace(log_bus_width=log_bus, max_burst_beats=burst)
    got = burst_beats(np.array(starts), row_bytes, cfg).tolist()
    assert got == reference_bursts(starts, row_bytes, cfg)


@settings(max_examples=80, deadline=None)
@given(
    beats=st.lists(st.integers(1, 16), min_size=1, max_size=40),
    latency=st.integers(1, 40),
    window=st.integers(1, 6),
)
def test_stream_schedule_matches_cycle_by_cycle_model(beats, latency, window):
    cfg = PYNQ.replace(dram_latency=latency, max_outstanding=window)
    assert burst_ends(np.array(beats), cfg).tolist() == reference_stream(beats, cfg)
    assert burst_ends(np.array(beats), cfg, write=True).tolist() == reference_write_stream(
        beats, cfg
    )


def stepped_ends(beats: list[int], latency: int, window: int, interval: int) -> list[int]:
    """Cycle-by-cycle reference of the read model: a request per cycle while fewer than
    `window` bursts are outstanding; data in request order, a burst's first beat `latency`
    cycles after its request, beats at least `interval` apart; a burst retires with its last
    beat and its slot is free the cycle after."""
    ends, ready, outstanding, issued, beat, next_beat, t = [], [], 0, 0, 0, 0, 0
    while len(ends) < len(beats):
        retire = issue = 0
        if issued < len(beats) and outstanding < window:
            ready.append(t + latency)
            issued, issue = issued + 1, 1
        burst = len(ends)
        if burst < issued and ready[burst] <= t and next_beat <= t:
            beat, next_beat = beat + 1, t + interval
            if beat == beats[burst]:
                ends.append(t + 1)
                beat, retire = 0, 1
        outstanding += issue - retire
        t += 1
    return ends


@pytest.mark.parametrize("interval", [1, 2, 3])
@pytest.mark.parametrize("latency, window", [(1, 1), (5, 2), (32, 4), (7, 8)])
def test_burst_ends_follow_the_cycle_stepped_memory_model(interval, latency, window):
    cfg = PYNQ.replace(dram_latency=latency, max_outstanding=window, dram_beat_interval=interval)
    rng = np.random.default_rng(latency * 31 + window * 7 + interval)
    for _ in range(20):
        beats = rng.integers(1, 17, int(rng.integers(1, 14))).tolist()
        assert burst_ends(np.array(beats), cfg).tolist() == stepped_ends(
            beats, latency, window, interval
        ), beats


def test_fetch_waits_for_every_beat_of_a_slower_memory():
    slow = PYNQ.replace(dram_beat_interval=3)  # 64-bit bus: two beats per instruction
    assert fetch_arrivals(2, slow).tolist() == [32 + 3 + 1, 32 + 9 + 1]
