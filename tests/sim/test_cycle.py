"""sim.cycle: exact cycle counts of small Programs worked out by hand from docs/timing.md, queue
and token stalls, deadlock reports, latency hiding, the trace file, and bit-exact agreement with
fsim. Programs are built from vta.isa dataclasses (pynq preset unless stated: 8-byte bus, DRAM
latency 32, so an instruction's bytes are complete at cycle 34 + 2k)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.cycle import CycleSimulator, schedule
from sim.functional import FunctionalSimulator
from sim.timing import fetch_arrivals, insn_cost
from testkit.examples import UNEQUAL_BLOCKS, all_examples, blocked_gemm, unequal_blocks
from vta.config import VTAConfig
from vta.device import get_device
from vta.errors import DeadlockError, DeviceError, ProgramError
from vta.isa import (
    MODULE_FLAGS,
    FinishInsn,
    GemmInsn,
    Insn,
    MemInsn,
    MemType,
    Module,
    TokenQueue,
    encode_stream,
    encode_uops,
    insn_module,
)
from vta.program import BufferSpec, Program

PYNQ = VTAConfig.load("pynq")


def program(insns: list[Insn], cfg: VTAConfig = PYNQ, dram: np.ndarray | None = None) -> Program:
    image = np.zeros(4096, dtype=np.uint8) if dram is None else dram
    return Program(cfg, encode_stream(insns, cfg), image)


def mem(mem_type: MemType, x_size: int = 1, store: bool = False, **fields) -> MemInsn:
    return MemInsn(
        is_store=store, memory_type=mem_type, y_size=1, x_size=x_size, x_stride=x_size, **fields
    )


def nop(mem_type: MemType = MemType.INP, **flags) -> MemInsn:
    """A NOP on the module that executes `mem_type` loads (INP: load, UOP: compute)."""
    return MemInsn(memory_type=mem_type, **flags)


def reset(iters: int = 1, **flags) -> GemmInsn:
    """A GEMM that zeroes `iters` ACC rows (1 + iters + 4 cycles)."""
    return GemmInsn(reset_reg=True, uop_bgn=0, uop_end=1, iter_out=iters, dst_factor_out=1, **flags)


def run(prog: Program, **options):
    return CycleSimulator(**options).execute(prog, prog.dram)


# ------------------------------------------------------------------------------- exact counts
def test_finish_alone():
    # Bytes complete at 34, dispatch 34, start 35, one cycle.
    _, stats = run(program([FinishInsn()]))
    assert stats.cycles == 36
    assert stats.modules["fetch"].stall_dram == 34
    assert stats.modules["compute"].busy == 1


def matmul_program() -> tuple[Program, np.ndarray]:
    """LOAD UOP, reset; LOAD INP, LOAD WGT -> GEMM -> STORE -> FINISH: one 1x16 by 16x16 product."""
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, 16, dtype=np.int8)
    w = rng.integers(-128, 128, (16, 16), dtype=np.int8)
    dram = np.zeros(1024, dtype=np.uint8)
    dram[0:4] = encode_uops([(0, 0, 0)], PYNQ).view(np.uint8)
    dram[16:32] = x.view(np.uint8)  # INP element 1
    dram[256:512] = w.reshape(-1).view(np.uint8)  # WGT element 1
    insns = [
        mem(MemType.UOP),
        reset(),
        mem(MemType.INP, dram_base=1),
        mem(MemType.WGT, dram_base=1, push_next_dep=True),
        GemmInsn(uop_bgn=0, uop_end=1, pop_prev_dep=True, push_next_dep=True),
        mem(MemType.OUT, store=True, dram_base=40, pop_prev_dep=True, push_prev_dep=True),
        FinishInsn(pop_next_dep=True),
    ]
    prog = Program(
        PYNQ, encode_stream(insns, PYNQ), dram, [BufferSpec("y", 640, (16,), "int8", "output")]
    )
    expected = (x.astype(np.int32) @ w.T.astype(np.int32)).astype(np.int8)
    return prog, expected


def test_matmul_cycle_count_by_hand():
    # 0 LOAD UOP (compute): dispatch 34, start 35, cost 1 + 1 beat + 32 = 34 -> end 69.
    # 1 GEMM reset (compute): dispatch 36, start 69, cost 1 + 1 + 4 = 6 -> end 75.
    # 2 LOAD INP (load): dispatch 38, start 39, cost 1 + 2 beats + 32 = 35 -> end 74.
    # 3 LOAD WGT (load): dispatch 40, start 74, cost 1 + 32 + 32 = 65 -> end 139, push l2g.
    # 4 GEMM (compute): dispatch 42, ready 75, token at 139 -> end 139 + 6 = 145, push g2s.
    # 5 STORE (store): dispatch 44, ready 45, token at 145, cost 1 + 2 beats + 33 -> end 181.
    # 6 FINISH (compute): dispatch 46, ready 145, token s2g at 181 -> end 182.
    prog, expected = matmul_program()
    final, stats = run(prog)
    assert stats.cycles == 182
    m = stats.modules
    assert (m["load"].busy, m["load"].stall_dram, m["load"].stall_token) == (36, 64, 0)
    assert (m["compute"].busy, m["compute"].stall_dram, m["compute"].stall_token) == (15, 32, 100)
    assert (m["store"].busy, m["store"].stall_dram, m["store"].stall_token) == (3, 33, 100)
    assert (m["fetch"].busy, m["fetch"].stall_dram, m["fetch"].stall_queue) == (7, 40, 0)
    assert [m[k].instructions for k in ("fetch", "load", "compute", "store")] == [7, 2, 4, 1]
    assert np.array_equal(prog.outputs(final)["y"], expected)
    assert stats.macs == 256 and stats.utilization == pytest.approx(1 / 182)


def test_schedule_events_by_hand():
    prog, _ = matmul_program()
    sched = schedule(prog)
    assert sched.dispatch.tolist() == [34, 36, 38, 40, 42, 44, 46]
    assert sched.start.tolist() == [35, 69, 39, 74, 139, 145, 181]
    assert sched.end.tolist() == [69, 75, 74, 139, 145, 181, 182]
    assert sched.wait_queue.tolist() == [-1, -1, -1, -1, 0, 2, 3]  # l2g, g2s, s2g


def test_instruction_after_finish_does_not_run():
    prog, _ = matmul_program()
    extra = Program(
        PYNQ,
        np.concatenate([prog.insns, encode_stream([mem(MemType.INP)], PYNQ)]),
        prog.dram,
        prog.buffers,
    )
    assert run(extra)[1].cycles == 182


def compute_chain(cfg: VTAConfig) -> Program:
    """LOAD UOP then three 105-cycle GEMMs then FINISH, all on the compute module."""
    dram = np.zeros(64, dtype=np.uint8)
    dram[0:4] = encode_uops([(0, 0, 0)], cfg).view(np.uint8)
    return program([mem(MemType.UOP), reset(100), reset(100), reset(100), FinishInsn()], cfg, dram)


def test_full_command_queue_stalls_fetch():
    # With 2 entries, insn 3 waits for insn 1 to leave the queue (start 69 -> dispatch 70, 30
    # cycles after 40) and FINISH for insn 2 (start 174 -> dispatch 175, 104 cycles after 71).
    # Compute-bound either way: 35 + 34 + 3 * 105 + 1 = 385.
    shallow = PYNQ.replace(cmd_queue_depth=2)
    sched = schedule(compute_chain(shallow))
    assert sched.dispatch.tolist() == [34, 36, 38, 70, 175]
    _, stats = run(compute_chain(shallow))
    assert stats.cycles == 385
    fetch = stats.modules["fetch"]
    assert (fetch.busy, fetch.stall_dram, fetch.stall_queue) == (5, 37, 134)
    _, deep = run(compute_chain(PYNQ))
    assert deep.cycles == 385 and deep.modules["fetch"].stall_queue == 0


def token_program(cfg: VTAConfig) -> Program:
    dram = np.zeros(64, dtype=np.uint8)
    dram[0:4] = encode_uops([(0, 0, 0)], cfg).view(np.uint8)
    insns = [
        mem(MemType.UOP),
        nop(push_next_dep=True),
        nop(push_next_dep=True),
        reset(pop_prev_dep=True),
        reset(pop_prev_dep=True),
        FinishInsn(),
    ]
    return program(insns, cfg, dram)


def test_push_into_full_token_queue_stalls():
    # Token queue of 1: the second load NOP ends at 40 but its push waits for the compute GEMM
    # to pop the first token (start 69), so it lands at 70: 30 cycles of stall_queue.
    # GEMM 4 is ready at 75 > 70, so the run ends as without the stall: 69 + 6 + 6 + 1 = 82.
    one = PYNQ.replace(token_queue_depth=1)
    sched = schedule(token_program(one))
    assert sched.done.tolist()[1:3] == [38, 70]
    _, stats = run(token_program(one))
    assert stats.cycles == 82
    assert stats.modules["load"].stall_queue == 30
    _, deep = run(token_program(PYNQ))
    assert deep.cycles == 82 and deep.modules["load"].stall_queue == 0


def test_token_stall_cycles_count_only_the_wait():
    # GEMM 3 is ready at 69 (after LOAD UOP) and its token arrived at 38: no stall.
    _, stats = run(token_program(PYNQ))
    assert stats.modules["compute"].stall_token == 0


# ------------------------------------------------------------------------------- deadlocks
def test_pop_without_push_is_a_deadlock():
    prog = program([mem(MemType.INP, pop_next_dep=True), FinishInsn()])
    with pytest.raises(DeadlockError) as err:
        run(prog)
    text = str(err.value)
    assert "load: blocked at instruction 0 (LOAD)" in text
    assert "g2l (compute->load); no remaining compute instruction pushes it" in text
    assert "compute: finished" in text and "store: finished" in text


def test_circular_wait_names_both_modules():
    prog = program(
        [
            mem(MemType.INP, pop_next_dep=True, push_next_dep=True),
            GemmInsn(uop_bgn=0, uop_end=1, pop_prev_dep=True, push_prev_dep=True),
            FinishInsn(),
        ]
    )
    with pytest.raises(DeadlockError) as err:
        run(prog)
    text = str(err.value)
    assert "load: blocked at instruction 0 (LOAD): waiting for a token on g2l" in text
    assert "compute: blocked at instruction 1 (GEMM): waiting for a token on l2g" in text


def test_consumer_behind_full_command_queue_is_a_deadlock():
    # Store waits for a g2s token the GEMM at index 3 would push, but fetch cannot dispatch
    # past the third STORE: the store command queue (2 entries) is full.
    shallow = PYNQ.replace(cmd_queue_depth=2)
    store = mem(MemType.OUT, store=True)
    insns = [
        store.replace(pop_prev_dep=True),
        store,
        store,
        reset(push_next_dep=True),
        FinishInsn(),
    ]
    with pytest.raises(DeadlockError) as err:
        run(program(insns, shallow))
    text = str(err.value)
    assert "fetch: blocked at instruction 2 (STORE): the store command queue is full" in text
    assert "store: blocked at instruction 0 (STORE): waiting for a token on g2s" in text
    assert "compute: blocked at instruction 3 (GEMM): not yet fetched" in text


def test_full_token_queue_never_drained_is_a_deadlock():
    one = PYNQ.replace(token_queue_depth=1)
    prog = program([nop(push_next_dep=True), nop(push_next_dep=True), FinishInsn()], one)
    with pytest.raises(DeadlockError, match=r"instruction 1 \(LOAD\): waiting for room in full"):
        run(prog)


# ------------------------------------------------------------------------------- errors
def test_max_cycles():
    prog, _ = matmul_program()
    assert run(prog, max_cycles=182)[1].cycles == 182
    with pytest.raises(DeviceError, match="cycle limit 181 exceeded: instruction 6 .FINISH"):
        run(prog, max_cycles=181)


def test_flag_a_module_does_not_have():
    prog = program([mem(MemType.INP, pop_prev_dep=True), FinishInsn()])
    with pytest.raises(
        ProgramError, match="instruction 0: LOAD runs on the load module.*'pop_prev_dep'"
    ):
        run(prog)


def test_stream_without_finish():
    with pytest.raises(DeviceError, match="without FINISH"):
        run(program([mem(MemType.INP)]))


def test_unknown_option():
    with pytest.raises(DeviceError, match="options trace and max_cycles"):
        CycleSimulator(clock=3)


def test_registered_as_sim():
    assert isinstance(get_device("sim"), CycleSimulator)


# ------------------------------------------------------------------------------- examples
CONFIGS = [*map(VTAConfig.load, ("pynq", "tiny", "ultra96")), *map(unequal_blocks, UNEQUAL_BLOCKS)]
EXAMPLES = [e for cfg in CONFIGS for e in all_examples(cfg)]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: f"{e.program.config.name}-{e.name}")
def test_examples_match_fsim_bit_for_bit(example):
    prog = example.program
    final, stats = run(prog)
    for name, want in example.expected.items():
        assert np.array_equal(prog.outputs(final)[name], want)
    reference, fstats = FunctionalSimulator().execute(prog, prog.dram)
    assert np.array_equal(final, reference)
    assert (stats.macs, stats.instructions) == (fstats.macs, fstats.instructions)
    assert stats.modules["fetch"].instructions == len(prog)


def gemm(threads: int):
    return blocked_gemm(
        "pynq", batch=64, in_channels=256, out_channels=256, block=(32, 64, 64), threads=threads
    ).program


def load_gemm_overlap(prog: Program) -> int:
    """Cycles in which a load-module instruction and a (non-reset) GEMM run at once."""
    sched = schedule(prog)
    gemm = np.array([isinstance(i, GemmInsn) and not i.reset_reg for i in sched.insns])
    load = sched.module == 0
    s1, e1 = sched.start[load][:, None], sched.end[load][:, None]
    s2, e2 = sched.start[gemm][None, :], sched.end[gemm][None, :]
    return int(np.maximum(np.minimum(e1, e2) - np.maximum(s1, s2), 0).sum())


def test_double_buffering_hides_latency():
    _, serial = run(gemm(1))
    _, overlapped = run(gemm(2))
    assert overlapped.cycles < 0.8 * serial.cycles
    assert overlapped.utilization > serial.utilization
    assert load_gemm_overlap(gemm(1)) == 0
    assert load_gemm_overlap(gemm(2)) > 0.5 * serial.modules["compute"].busy


def test_module_cycles_add_up():
    prog = gemm(2)
    sched = schedule(prog)
    _, stats = run(prog)
    for name in ("load", "compute", "store"):
        mod = stats.modules[name]
        assert mod.busy + mod.stall_dram + mod.stall_token + mod.stall_queue <= stats.cycles
    fetch = stats.modules["fetch"]
    assert fetch.busy + fetch.stall_dram + fetch.stall_queue == sched.dispatch[-1] + 1
    for m in range(3):  # a module runs one instruction at a time, in order
        mine = sched.module == m
        assert np.all(sched.start[mine][1:] >= sched.done[mine][:-1])
    assert np.all(sched.start > sched.dispatch)


def test_million_cycle_gemm_matches_fsim():
    """The benchmark-sized Program (about 1.1 M cycles) agrees with fsim bit for bit."""
    example = blocked_gemm(
        "pynq", batch=256, in_channels=1024, out_channels=1024, block=(64, 256, 128), threads=2
    )
    prog = example.program
    final, stats = run(prog)
    assert stats.cycles > 1_000_000
    assert np.array_equal(final, FunctionalSimulator().execute(prog, prog.dram)[0])


# ------------------------------------------------------------------------------- trace
def test_trace_is_a_perfetto_timeline(tmp_path):
    prog, _ = matmul_program()
    path = tmp_path / "run.json"
    run(prog, trace=path)
    doc = json.loads(path.read_text())
    events = doc["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert names == {0: "fetch", 1: "load", 2: "compute", 3: "store"}
    slices = [e for e in events if e["ph"] == "X"]
    insns = [e for e in slices if e["cat"] == "insn"]
    assert sorted(e["args"]["index"] for e in insns) == list(range(7))
    gemm = next(e for e in insns if e["args"]["index"] == 4)
    assert (gemm["name"], gemm["tid"], gemm["args"]["cycle"], gemm["args"]["cycles"]) == (
        "GEMM",
        2,
        139,
        6,
    )
    assert gemm["ts"] == pytest.approx(139 / PYNQ.clock_mhz)
    waits = {
        (e["tid"], e["name"], e["args"]["cycle"], e["args"]["cycles"])
        for e in slices
        if e["cat"] == "stall_token"
    }
    assert waits == {(2, "wait l2g", 75, 64), (3, "wait g2s", 45, 100), (2, "wait s2g", 145, 36)}
    dispatches = [e for e in slices if e["cat"] == "dispatch"]
    assert len(dispatches) == 7 and all(e["tid"] == 0 for e in dispatches)


# ------------------------------------------------------------------------------- clocked reference
QUEUES = tuple(TokenQueue)
ROUTES = MODULE_FLAGS  # the token queue each dependence flag names, per module


def clocked_reference(prog: Program) -> dict[str, list[int]] | None:
    """The same contract stepped one clock at a time (None on deadlock): in each cycle, finished
    instructions push (if the queue had room before this cycle), then idle modules start their
    head instruction (dispatched earlier, tokens visible), then fetch dispatches one instruction
    (bytes arrived, a command-queue slot freed before this cycle)."""
    cfg, insns = prog.config, prog.instructions
    n = len(insns)
    module = [insn_module(insn) for insn in insns]
    routes = [ROUTES[insn_module(insn)] for insn in insns]
    pops = [
        [q for f, q in r.items() if f.startswith("pop") and getattr(i, f)]
        for i, r in zip(insns, routes, strict=True)
    ]
    pushes = [
        [q for f, q in r.items() if f.startswith("push") and getattr(i, f)]
        for i, r in zip(insns, routes, strict=True)
    ]
    cost = [insn_cost(insn, cfg).cycles for insn in insns]
    arrival = fetch_arrivals(n, cfg).tolist()
    out = {key: [-1] * n for key in ("dispatch", "start", "end", "done")}
    pushed, popped = {q: [] for q in QUEUES}, {q: [] for q in QUEUES}
    queues = [[j for j in range(n) if module[j] == m] for m in range(3)]
    head, running, fetched = [0, 0, 0], [None, None, None], 0
    limit = max(arrival) + sum(cost) + 10 * n + 100
    for t in range(limit):
        for m in range(3):
            j = running[m]
            if j is not None and out["end"][j] <= t:
                room = all(
                    len(pushed[q]) - sum(p < t for p in popped[q]) < cfg.token_queue_depth
                    for q in pushes[j]
                )
                if room:
                    for q in pushes[j]:
                        pushed[q].append(t)
                    out["done"][j], running[m] = t, None
                    head[m] += 1
        for m in range(3):
            if running[m] is None and head[m] < len(queues[m]):
                j = queues[m][head[m]]
                ready = 0 <= out["dispatch"][j] < t
                if ready and all(len(popped[q]) < sum(p <= t for p in pushed[q]) for q in pops[j]):
                    for q in pops[j]:
                        popped[q].append(t)
                    out["start"][j], out["end"][j], running[m] = t, t + cost[j], j
        if fetched < n and arrival[fetched] <= t:
            m = module[fetched]
            waiting = sum(
                1 for j in queues[m] if 0 <= out["dispatch"][j] and not 0 <= out["start"][j] < t
            )
            if waiting < cfg.cmd_queue_depth:
                out["dispatch"][fetched] = t
                fetched += 1
        if all(d >= 0 for d in out["done"]):
            return out
    return None


# Per module, an instruction of a size (0 is a NOP) with given dependence flags.
_MAKE = {
    Module.LOAD: lambda size, **flags: MemInsn(
        memory_type=MemType.INP, y_size=1, x_size=size, x_stride=size, **flags
    ),
    Module.COMPUTE: lambda size, **flags: reset(size + 1, **flags),
    Module.STORE: lambda size, **flags: MemInsn(
        is_store=True, memory_type=MemType.OUT, y_size=1, x_size=size, x_stride=size, **flags
    ),
}


def random_stream(body, matched: bool) -> list[Insn]:
    """Instructions from (module, size, flag wishes). If `matched`, a pop is kept only when an
    earlier instruction pushed a token not yet popped, and the consumers drain every token left
    at the end, so only the command and token queue capacities can deadlock."""
    tokens, insns = dict.fromkeys(QUEUES, 0), []
    for m, size, wish in body:
        stage, flags = Module(m), {}
        for want, (flag, queue) in zip(wish, ROUTES[stage].items(), strict=False):
            push = flag.startswith("push")
            flags[flag] = want and (push or not matched or tokens[queue] > 0)
            tokens[queue] += (1 if push else -1) if flags[flag] else 0
        insns.append(_MAKE[stage](size, **flags))
    if matched:
        for stage, routes in ROUTES.items():
            for flag, queue in routes.items():
                if flag.startswith("pop"):
                    insns += [_MAKE[stage](0, **{flag: True})] * tokens[queue]
    return insns + [FinishInsn()]


@settings(max_examples=200, deadline=None)
@given(
    body=st.lists(
        st.tuples(
            st.integers(0, 2), st.integers(0, 3), st.lists(st.booleans(), min_size=4, max_size=4)
        ),
        min_size=1,
        max_size=16,
    ),
    matched=st.booleans(),
    cmd_depth=st.sampled_from([2, 4, 512]),
    token_depth=st.sampled_from([1, 2, 1024]),
)
def test_schedule_matches_clocked_reference(body, matched, cmd_depth, token_depth):
    cfg = PYNQ.replace(cmd_queue_depth=cmd_depth, token_queue_depth=token_depth)
    prog = program(random_stream(body, matched), cfg)
    want = clocked_reference(prog)
    if want is None:
        with pytest.raises(DeadlockError):
            schedule(prog)
        return
    got = schedule(prog)
    for key, values in want.items():
        assert getattr(got, key).tolist() == values, key


@pytest.mark.parametrize("seed", range(8))
def test_timing_only_reports_what_a_full_run_reports(seed):
    """`time` skips the data, not the timing: the same cycles, per-module stats and counters."""
    from testkit.program_fuzz import random_program

    program = random_program(seed, "pynq")
    sim = CycleSimulator()
    _, full = sim.execute(program, program.dram.copy())
    timed = sim.time(program)
    assert timed.to_dict() == full.to_dict()


def test_cli_timing_only(tmp_path, capsys):
    from vta.cli import main

    example = blocked_gemm(PYNQ, batch=4, in_channels=64, out_channels=64, threads=2)
    path = tmp_path / "gemm.npz"
    example.program.save(path)
    assert main(["sim", str(path), "--timing-only", "--json"]) == 0
    timed = json.loads(capsys.readouterr().out)
    assert main(["sim", str(path), "--json"]) == 0
    assert timed == json.loads(capsys.readouterr().out)
