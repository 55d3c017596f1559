"""`validate_program`: the static checks every Program passes before any device runs it.

Findings name the instruction index and field and say what would be valid. The checks follow
ARCHITECTURE.md ("ISA decisions") and vta-isa.md sections 2-3: memory types per stage, SRAM and
DRAM ranges, dependence-flag directions, token balance and capacity, GEMM write hazards, MUL and
REQ availability, REQ immediates, reads of SRAM never written, races between modules (an SRAM
entry written by one module and read by another with no dependence token ordering the two),
FINISH, and a static deadlock check. Field decoding is vectorized over the whole stream; the
per-instruction passes (token run, dataflow) do small constant work per instruction and analyse
each distinct GEMM/ALU instruction and kernel once, so ~100k instructions validate in about a
second.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import numpy as np

from .errors import ValidationError
from .isa import (
    ALU_OP_GATES,
    REQ_RELU_BIT,
    REQ_SHIFT_MASK,
    AluOp,
    MemType,
    Opcode,
    Stage,
    available_alu_ops,
    decode_uops,
    layouts,
)
from .program import Program

MAX_PER_CHECK = 20  # findings reported per kind of check before summarizing the rest
_DENSE_SUMSET = 1 << 16  # largest |A|*|B| for which a sumset is formed explicitly
_DEP_BITS = 0x78  # header bits 3..6: pop_prev, pop_next, push_prev, push_next

# Token queues: (name, producer stage, producer flag, consumer stage, consumer flag).
TOKEN_QUEUES = (
    ("l2g", Stage.LOAD, "push_next_dep", Stage.COMPUTE, "pop_prev_dep"),
    ("g2l", Stage.COMPUTE, "push_prev_dep", Stage.LOAD, "pop_next_dep"),
    ("g2s", Stage.COMPUTE, "push_next_dep", Stage.STORE, "pop_prev_dep"),
    ("s2g", Stage.STORE, "push_prev_dep", Stage.COMPUTE, "pop_next_dep"),
)
_QUEUE_SETS = [tuple(q for q in range(4) if mask >> q & 1) for mask in range(16)]  # bits -> ids
_LOADABLE = (MemType.UOP, MemType.WGT, MemType.INP, MemType.ACC)
# Module (0 load, 1 compute, 2 store) that writes / that reads each buffer shared between modules.
_WRITER_MODULE = {int(MemType.INP): 0, int(MemType.WGT): 0, int(MemType.OUT): 1}
_READER_MODULE = {int(MemType.INP): 1, int(MemType.WGT): 1, int(MemType.OUT): 2}


def validate_program(program: Program) -> None:
    """Raise `ValidationError` listing every problem found in `program`."""
    problems = find_problems(program)
    if problems:
        raise ValidationError(problems)


def find_problems(program: Program) -> list[str]:
    """Every problem found in `program`, one message each (empty if it is valid)."""
    return _Checker(program).run()


def decode_columns(program: Program) -> dict[str, dict[str, np.ndarray]]:
    """Every field of every instruction family, decoded for the whole stream (int64 arrays)."""
    words = np.frombuffer(program.insns.tobytes(), dtype="<u8").reshape(-1, 2)
    columns: dict[str, dict[str, np.ndarray]] = {}
    for family, fields in layouts(program.config).items():
        cols = {}
        for f in fields:
            word = words[:, f.lsb // 64]
            value = ((word >> np.uint64(f.lsb % 64)) & np.uint64((1 << f.width) - 1)).astype(
                np.int64
            )
            if f.signed:
                value = np.where(value >> (f.width - 1), value - (1 << f.width), value)
            cols[f.name] = value
        columns[family] = cols
    return columns


def _sumset(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The distinct values a_i + b_j (non-negative integers)."""
    a, b = np.unique(a), np.unique(b)
    if a.size * b.size <= _DENSE_SUMSET:
        return np.unique(np.add.outer(a, b))
    hits = np.convolve((np.bincount(a) > 0).astype(np.int32), (np.bincount(b) > 0).astype(np.int32))
    return np.flatnonzero(hits)


def _as_rows(idx: np.ndarray) -> np.ndarray | slice:
    """Sorted distinct SRAM indices as a slice when contiguous (cheaper to index repeatedly)."""
    if idx.size and idx[-1] - idx[0] + 1 == idx.size:
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return idx


class _Checker:
    """One validation run: decoded columns, findings, and the per-check passes."""

    def __init__(self, program: Program):
        self.program = program
        self.config = program.config
        self.n = len(program)
        self.problems: list[str] = []
        self.cols = decode_columns(program)
        mem = self.cols["mem"]
        self.opcode = mem["opcode"]
        self.flags = {name: mem[name].astype(bool) for name in (f[2] for f in TOKEN_QUEUES)}
        self.flags.update({f[4]: mem[f[4]].astype(bool) for f in TOKEN_QUEUES})
        self.is_mem = (self.opcode == Opcode.LOAD) | (self.opcode == Opcode.STORE)
        self.is_store = self.opcode == Opcode.STORE
        self.is_load = self.opcode == Opcode.LOAD
        self.mem_type = mem["memory_type"]
        self.nop = self.is_mem & (mem["x_size"] == 0)
        self.stage = np.full(self.n, int(Stage.COMPUTE), dtype=np.int64)
        self.stage[self.is_load & np.isin(self.mem_type, (MemType.INP, MemType.WGT))] = Stage.LOAD
        self.stage[self.is_store] = Stage.STORE

    def run(self) -> list[str]:
        if self._check_decoding():
            return self.problems
        self._check_dep_directions()
        self._check_memory_types()
        self._check_mem_ranges()
        self._check_compute_fields()
        self._check_token_balance()
        self._run_tokens()
        self._check_dataflow()
        self._check_finish()
        return self.problems

    # ------------------------------------------------------------------------- helpers
    def _each(self, mask: np.ndarray, message: Callable[[int], str]) -> None:
        """One finding per instruction in `mask` (capped at MAX_PER_CHECK, then summarized)."""
        indices = np.flatnonzero(mask)
        for i in indices[:MAX_PER_CHECK]:
            self.problems.append(message(int(i)))
        if indices.size > MAX_PER_CHECK:
            self.problems.append(
                f"... and {indices.size - MAX_PER_CHECK} more instruction(s) with the problem "
                f"of instruction {int(indices[0])}"
            )

    def _name(self, i: int) -> str:
        """'LOAD INP', 'GEMM', ... for instruction i."""
        op = Opcode(int(self.opcode[i]))
        if op in (Opcode.LOAD, Opcode.STORE):
            return f"{op.name} {MemType(int(self.mem_type[i])).name}"
        if op == Opcode.ALU:
            return f"ALU {AluOp(int(self.cols['alu']['alu_opcode'][i])).name}"
        return op.name

    def _elem_bytes(self, mem_type: MemType) -> int:
        return self.config.elem_bytes[mem_type.name.lower()]

    def _depth(self, mem_type: MemType) -> int:
        return self.config.depth[mem_type.name.lower()]

    # ------------------------------------------------------------------------- field checks
    def _check_decoding(self) -> bool:
        """Opcodes, memory types and ALU opcodes the ISA defines; later checks need them."""
        bad_op = self.opcode > max(Opcode)
        self._each(
            bad_op, lambda i: f"instruction {i}: unknown opcode {self.opcode[i]} (valid: 0..4)"
        )
        bad_mem = self.is_mem & (self.mem_type > max(MemType))
        self._each(
            bad_mem,
            lambda i: f"instruction {i}: unknown memory_type {self.mem_type[i]} (valid: 0..5)",
        )
        alu_op = self.cols["alu"]["alu_opcode"]
        bad_alu = (self.opcode == Opcode.ALU) & (alu_op > max(AluOp))
        self._each(
            bad_alu,
            lambda i: (
                f"instruction {i}: unknown alu_opcode {alu_op[i]} (valid: 0..{int(max(AluOp))})"
            ),
        )
        return bool(self.problems)

    def _check_dep_directions(self) -> None:
        for stage, flags, why in (
            (Stage.LOAD, ("pop_prev_dep", "push_prev_dep"), "the load stage has no previous"),
            (Stage.STORE, ("pop_next_dep", "push_next_dep"), "the store stage has no next"),
        ):
            for flag in flags:
                mask = (self.stage == stage) & self.flags[flag]
                self._each(
                    mask,
                    lambda i, f=flag, w=why: (
                        f"instruction {i} ({self._name(i)}): {f} must be 0 ({w} stage)"
                    ),
                )

    def _check_memory_types(self) -> None:
        mem = self.cols["mem"]
        active = self.is_mem & ~self.nop
        pads = ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")
        padded = np.zeros(self.n, dtype=bool)
        for p in pads:
            padded |= mem[p] != 0
        loadable = ", ".join(m.name for m in _LOADABLE)

        def pad_text(i: int) -> str:
            return ",".join(str(mem[p][i]) for p in pads)

        store = active & self.is_store
        self._each(
            store & (self.mem_type != MemType.OUT),
            lambda i: (
                f"instruction {i}: STORE "
                f"memory_type {MemType(int(self.mem_type[i])).name} (valid: OUT)"
            ),
        )
        self._each(
            store & padded,
            lambda i: (
                f"instruction {i}: STORE has padding "
                f"{pad_text(i)} (y_pad_0,y_pad_1,x_pad_0,x_pad_1 must be 0)"
            ),
        )
        load = active & self.is_load
        self._each(
            load & ~np.isin(self.mem_type, _LOADABLE),
            lambda i: (
                f"instruction {i}: "
                f"LOAD memory_type {MemType(int(self.mem_type[i])).name} is not supported "
                f"(valid: {loadable})"
            ),
        )
        self._each(
            load & (self.mem_type == MemType.WGT) & padded,
            lambda i: (
                f"instruction {i}: LOAD WGT has padding {pad_text(i)} (WGT loads take no padding)"
            ),
        )
        uop = load & (self.mem_type == MemType.UOP)
        self._each(
            uop & (mem["y_size"] != 1),
            lambda i: (
                f"instruction {i}: LOAD UOP y_size = "
                f"{mem['y_size'][i]} (UOP loads are contiguous: y_size must be 1)"
            ),
        )
        self._each(
            uop & padded,
            lambda i: (
                f"instruction {i}: LOAD UOP has padding {pad_text(i)} (UOP loads take no padding)"
            ),
        )

    def _mem_extents(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """SRAM footprint (entries), first and end DRAM element of each LOAD/STORE."""
        mem = self.cols["mem"]
        y, x = mem["y_size"], mem["x_size"]
        width = mem["x_pad_0"] + x + mem["x_pad_1"]
        footprint = (mem["y_pad_0"] + y + mem["y_pad_1"]) * width
        footprint = np.where(self.is_store, y * x, footprint)
        uop = self.is_load & (self.mem_type == MemType.UOP)
        footprint = np.where(uop, x, footprint)
        dram_end = mem["dram_base"] + np.maximum(y - 1, 0) * mem["x_stride"] + x
        dram_end = np.where(y == 0, mem["dram_base"], dram_end)
        dram_end = np.where(uop, mem["dram_base"] + x, dram_end)  # UOP loads ignore y_size
        return footprint, mem["dram_base"], dram_end

    def _check_mem_ranges(self) -> None:
        mem = self.cols["mem"]
        footprint, dram_lo, dram_hi = self._mem_extents()
        self.footprint = footprint
        self.dram_ok = np.ones(self.n, dtype=bool)
        self.sram_ok = np.ones(self.n, dtype=bool)
        active = self.is_mem & ~self.nop
        for mem_type in (*_LOADABLE, MemType.OUT):
            sel = active & (self.mem_type == mem_type)
            if not sel.any():
                continue
            depth, elem = self._depth(mem_type), self._elem_bytes(mem_type)
            over = sel & (mem["sram_base"] + footprint > depth)
            self.sram_ok &= ~over
            self._each(
                over,
                lambda i, d=depth, t=mem_type.name: (
                    f"instruction {i} "
                    f"({self._name(i)}): SRAM entries [{mem['sram_base'][i]}, "
                    f"{mem['sram_base'][i] + footprint[i]}) from sram_base and sizes exceed "
                    f"the {t} buffer (depth {d})"
                ),
            )
            outside = sel & (dram_hi * elem > self.program.dram.size)
            self.dram_ok &= ~outside
            self._each(
                outside,
                lambda i, e=elem: (
                    f"instruction {i} ({self._name(i)}): DRAM "
                    f"bytes [{dram_lo[i] * e}, {dram_hi[i] * e}) from dram_base, y_size, "
                    f"x_size and x_stride lie outside the {self.program.dram.size}-byte "
                    "DRAM image"
                ),
            )

    def _check_compute_fields(self) -> None:
        is_gemm, is_alu = self.opcode == Opcode.GEMM, self.opcode == Opcode.ALU
        compute = is_gemm | is_alu
        c = self.cols["gemm"]  # word 0 (reset_reg, uop_bgn, uop_end, iters) is shared with ALU
        depth = self._depth(MemType.UOP)
        for field in ("iter_out", "iter_in"):
            self._each(
                compute & (c[field] == 0),
                lambda i, f=field: f"instruction {i} ({self._name(i)}): {f} = 0 (valid: >= 1)",
            )
        empty = compute & (c["uop_end"] <= c["uop_bgn"])
        self._each(
            empty,
            lambda i: (
                f"instruction {i} ({self._name(i)}): uop_end "
                f"{c['uop_end'][i]} <= uop_bgn {c['uop_bgn'][i]} (valid: uop_bgn < uop_end)"
            ),
        )
        beyond = compute & (c["uop_end"] > depth)
        self._each(
            beyond,
            lambda i: (
                f"instruction {i} ({self._name(i)}): uop_end "
                f"{c['uop_end'][i]} exceeds the UOP buffer (depth {depth})"
            ),
        )
        self.compute_ok = compute & ~empty & ~beyond & (c["iter_out"] > 0) & (c["iter_in"] > 0)
        alu = self.cols["alu"]
        valid = ", ".join(op.name for op in available_alu_ops(self.config))
        for op, field in ALU_OP_GATES.items():
            if not getattr(self.config, field):
                self._each(
                    is_alu & (alu["alu_opcode"] == op),
                    lambda i, op=op, field=field: (
                        f"instruction {i}: ALU alu_opcode {op.name} needs a configuration with "
                        f"{field} (config {self.config.name!r} has none; valid: {valid})"
                    ),
                )
        stray = alu["imm"] & ~(REQ_SHIFT_MASK | REQ_RELU_BIT)
        self._each(
            is_alu & (alu["alu_opcode"] == AluOp.REQ) & (stray != 0),
            lambda i: (
                f"instruction {i} (ALU REQ): imm {alu['imm'][i]} sets bits other than the shift "
                "(bits 4:0) and relu (bit 5) (valid: 0..63)"
            ),
        )

    # ------------------------------------------------------------------------- dataflow
    def _check_dataflow(self) -> None:
        """Program-order pass over SRAM contents: micro-op kernels, index ranges, reads of SRAM
        never written and, when the token run finished, races between modules."""
        mem = self.cols["mem"]
        self.uop_sram = np.full(self._depth(MemType.UOP), -1, dtype=np.int64)
        # Per SRAM entry, the module position of its last writer (-1: never written) and, for
        # the buffers another module reads (INP/WGT: compute, OUT: store), of its last reader.
        self.writer = {
            int(t): np.full(self._depth(t), -1, dtype=np.int64)
            for t in (MemType.INP, MemType.WGT, MemType.ACC, MemType.OUT)
        }
        self.reader = {
            int(t): np.full(self._depth(t), -1, dtype=np.int64)
            for t in (MemType.INP, MemType.WGT, MemType.OUT)
        }
        self.dataflow_findings = 0
        kernels: dict[tuple, dict | None] = {}
        words = np.frombuffer(self.program.insns.tobytes(), dtype="<u8").reshape(-1, 2)
        dram_words = self.program.dram[: self.program.dram.size // 4 * 4].view("<u4")
        mem_ok = self.is_mem & ~self.nop & self.sram_ok & self.dram_ok
        mem_ok &= np.isin(self.mem_type, (*_LOADABLE, MemType.OUT))
        todo = np.flatnonzero(mem_ok | self.compute_ok)
        opcode, mem_type, base = self.opcode.tolist(), self.mem_type.tolist(), mem["sram_base"]
        base, footprint, dram_base = base.tolist(), self.footprint.tolist(), mem["dram_base"]
        dram_base = dram_base.tolist()
        bgn, end = self.cols["gemm"]["uop_bgn"].tolist(), self.cols["gemm"]["uop_end"].tolist()
        w0, w1 = words[:, 0].tolist(), words[:, 1].tolist()
        load, store, uop = int(Opcode.LOAD), int(Opcode.STORE), int(MemType.UOP)
        acc, out = int(MemType.ACC), int(MemType.OUT)
        for i in todo.tolist():
            op = opcode[i]
            if op == load:
                t, rows = mem_type[i], slice(base[i], base[i] + footprint[i])
                if t == uop:
                    self.uop_sram[rows] = dram_words[dram_base[i] : dram_base[i] + footprint[i]]
                    continue
                if t != acc:
                    self._check_war(i, t, rows)
                self.writer[t][rows] = self.pos[i]
            elif op == store:
                rows = slice(base[i], base[i] + footprint[i])
                unwritten = np.flatnonzero(self.writer[out][rows] < 0)
                if unwritten.size:
                    self._report_dataflow(
                        f"instruction {i} (STORE OUT): reads OUT entries [{rows.start}, "
                        f"{rows.stop}) of which {unwritten.size} (first: "
                        f"{rows.start + int(unwritten[0])}) no earlier GEMM/ALU wrote (OUT holds "
                        "only GEMM/ALU results; put an ALU copy after a LOAD ACC)"
                    )
                self._check_raw(i, out, rows)
                self.reader[out][rows] = self.pos[i]
            else:
                # Same fields (but tokens) and kernel contents: same ranges and hazards, so each
                # distinct instruction is analysed once; ordering is checked on every instance.
                key = (w0[i] & ~_DEP_BITS, w1[i], self.uop_sram[bgn[i] : end[i]].tobytes())
                if key not in kernels:
                    kernels[key] = self._check_kernel_insn(i)
                if kernels[key] is not None:
                    self._order_kernel_insn(i, **kernels[key])

    def _report_dataflow(self, message: str) -> None:
        self.dataflow_findings += 1
        if self.dataflow_findings <= MAX_PER_CHECK:
            self.problems.append(message)
        elif self.dataflow_findings == MAX_PER_CHECK + 1:
            self.problems.append("... further dataflow findings omitted")

    def _check_kernel_insn(self, i: int) -> dict | None:
        """Micro-op ranges, write hazards and unwritten reads of one GEMM/ALU instruction; the
        SRAM entries it reads and writes (None if they are out of range)."""
        is_gemm = self.opcode[i] == Opcode.GEMM
        f = self.cols["gemm" if is_gemm else "alu"]
        bgn, end = int(f["uop_bgn"][i]), int(f["uop_end"][i])
        words = self.uop_sram[bgn:end]
        name = self._name(i)
        if (words < 0).any():
            missing = bgn + int(np.flatnonzero(words < 0)[0])
            self._report_dataflow(
                f"instruction {i} ({name}): micro-ops [{bgn}, {end}) include UOP entry "
                f"{missing} that no earlier LOAD UOP wrote"
            )
            return None
        uops = decode_uops(words.astype(np.uint32), self.config)
        io, ii = int(f["iter_out"][i]), int(f["iter_in"][i])
        reset = bool(f["reset_reg"][i]) and is_gemm
        use_imm = not is_gemm and bool(f["use_imm"][i])
        acc, inp, wgt = MemType.ACC, MemType.INP, MemType.WGT
        operands = [("dst_idx", 0, "dst", acc, not reset)]
        if is_gemm:
            operands += [
                ("src_idx", 1, "src", inp, not reset),
                ("wgt_idx", 2, "wgt", wgt, not reset),
            ]
        else:
            operands.append(("src_idx", 1, "src", acc, not use_imm))
            if uops[:, 2].any():
                k = int(np.flatnonzero(uops[:, 2])[0])
                self._report_dataflow(
                    f"instruction {i} ({name}): micro-op {bgn + k} has wgt_idx "
                    f"{int(uops[k, 2])} (ALU micro-ops take wgt_idx 0)"
                )
        index_sets = {}
        for field, col, factor, mem_type, _ in operands:
            fo, fi = int(f[f"{factor}_factor_out"][i]), int(f[f"{factor}_factor_in"][i])
            top = int(uops[:, col].max()) + (io - 1) * fo + (ii - 1) * fi
            depth = self._depth(mem_type)
            if top >= depth:
                self._report_dataflow(
                    f"instruction {i} ({name}): micro-op {field} reaches {mem_type.name} entry "
                    f"{top} over iter_out={io} x iter_in={ii} with {factor}_factor_out={fo}, "
                    f"{factor}_factor_in={fi} (depth {depth})"
                )
                return None
            offsets = _sumset(np.arange(io) * fo, np.arange(ii) * fi)
            index_sets[field] = _sumset(uops[:, col], offsets)
        if is_gemm:
            self._check_gemm_hazard(i, uops[:, 0], bgn, io, ii, f)
        reads = [(f, int(t), index_sets[f]) for f, _, _, t, read in operands if read]
        for field, mem_type, idx in reads:
            unwritten = idx[self.writer[mem_type][idx] < 0]
            if unwritten.size:
                self._report_dataflow(
                    f"instruction {i} ({name}): micro-op {field} reads {MemType(mem_type).name} "
                    f"entries never written before (first: {int(unwritten[0])}, "
                    f"{unwritten.size} in all)"
                )
        return {
            "reads": [(f, t, _as_rows(idx)) for f, t, idx in reads],
            "dst": _as_rows(index_sets["dst_idx"]),
        }

    def _order_kernel_insn(self, i: int, reads: list, dst: np.ndarray | slice) -> None:
        """Every GEMM/ALU instance: ordering against the load and store modules, then its
        reads and writes become the entries' last reader and writer."""
        pos = self.pos[i]
        for _, mem_type, idx in reads:
            if mem_type != MemType.ACC:  # INP/WGT come from the load module
                self._check_raw(i, mem_type, idx)
                self.reader[mem_type][idx] = pos
        self._check_war(i, int(MemType.OUT), dst)
        self.writer[int(MemType.ACC)][dst] = pos
        self.writer[int(MemType.OUT)][dst] = pos

    def _check_raw(self, i: int, mem_type: int, idx) -> None:
        """The last writers of what `i` reads, in another module, must finish before it starts."""
        if self.clock is None:
            return
        module = _WRITER_MODULE[mem_type]
        last = int(self.writer[mem_type][idx].max())
        if last > self.clock[i][module]:
            w = self.order[module][last]
            self._report_race(
                i,
                w,
                f"reads {MemType(mem_type).name} entries that instruction "
                f"{w} ({self._name(w)}) writes",
            )

    def _check_war(self, i: int, mem_type: int, idx) -> None:
        """The last readers of what `i` overwrites, in another module, must finish before it."""
        if self.clock is None:
            return
        module = _READER_MODULE[mem_type]
        last = int(self.reader[mem_type][idx].max())
        if last > self.clock[i][module]:
            r = self.order[module][last]
            self._report_race(
                i,
                r,
                f"overwrites {MemType(mem_type).name} entries that "
                f"instruction {r} ({self._name(r)}) reads",
            )

    def _report_race(self, i: int, other: int, what: str) -> None:
        mine, theirs = Stage(int(self.stage[i])), Stage(int(self.stage[other]))
        self._report_dataflow(
            f"instruction {i} ({self._name(i)}): {what}, but no dependence token orders the two "
            f"(race: the {mine.name.lower()} stage must pop a token the "
            f"{theirs.name.lower()} stage pushes at or after instruction {other})"
        )

    def _check_gemm_hazard(
        self, i: int, dst: np.ndarray, bgn: int, io: int, ii: int, f: dict
    ) -> None:
        """Two consecutive micro-ops of one GEMM may not write the same ACC row (reset included,
        as the reference runtime's VerifyDep)."""
        dfo, dfi = int(f["dst_factor_out"][i]), int(f["dst_factor_in"][i])
        first, last = int(dst[0]), int(dst[-1])
        same = np.flatnonzero(dst[1:] == dst[:-1])
        where = None
        if same.size:
            k = bgn + int(same[0])
            where = f"micro-ops {k} and {k + 1} both write ACC row {int(dst[same[0]])}"
        elif ii > 1 and last == first + dfi:
            where = f"consecutive iter_in iterations write ACC row {last} back to back"
        elif io > 1 and last + (ii - 1) * dfi == first + dfo:
            where = f"consecutive iter_out iterations write ACC row {first + dfo} back to back"
        if where:
            self._report_dataflow(
                f"instruction {i} (GEMM): {where} (the GEMM pipeline has no hazard check; "
                "consecutive micro-ops must write different rows)"
            )

    # ------------------------------------------------------------------------- tokens
    def _check_token_balance(self) -> None:
        for name, src, push, dst, pop in TOKEN_QUEUES:
            pushes = np.flatnonzero((self.stage == src) & self.flags[push])
            pops = np.flatnonzero((self.stage == dst) & self.flags[pop])
            route = f"{src.name.lower()}->{dst.name.lower()}"
            head = (
                f"token queue {name} ({route}) is unbalanced: {pushes.size} push(es), "
                f"{pops.size} pop(s); "
            )
            if pushes.size > pops.size:
                i = int(pushes[pops.size])
                self.problems.append(head + f"the {push} of instruction {i} is never popped")
            elif pops.size > pushes.size:
                i = int(pops[pushes.size])
                self.problems.append(head + f"the {pop} of instruction {i} has no matching push")

    def _run_tokens(self) -> None:
        """Abstract run of fetch and the three modules with token queues, no timing.

        Fetch dispatches in order and stalls on a full command queue; each module executes its
        queue in order, popping before and pushing after an instruction; a push into a full token
        queue waits. Modules run as far ahead as they can (load first), the worst case for
        token-queue occupancy, which is checked against token_queue_depth. The process network is
        deterministic, so if this run cannot finish, no real run can (a deadlock).

        A finished run also yields happens-before: tokens carry the vector clock of their
        pusher, so `clock[i][m]` is the last position in module m's queue known to have finished
        before instruction i starts (its own position for its own module).
        """
        stages = list(Stage)
        order = [np.flatnonzero(self.stage == s) for s in stages]
        pop_masks = [self._queue_masks(idx, 4) for idx in order]
        push_masks = [self._queue_masks(idx, 2) for idx in order]
        self.order = order = [idx.tolist() for idx in order]
        pos = np.zeros(self.n, dtype=np.int64)
        for idx in order:
            pos[idx] = np.arange(len(idx))
        self.pos = pos.tolist()
        slot = (self.stage - 1).tolist()  # module of each instruction: 0 load, 1 compute, 2 store
        queues: list[deque] = [deque() for _ in TOKEN_QUEUES]  # clocks of the tokens in flight
        clock: list[tuple] = [()] * self.n
        last = [(-1, -1, -1)] * 3  # clock of each module's latest instruction
        dispatched, started = [0, 0, 0], [0, 0, 0]
        to_push: list[list[int]] = [[], [], []]
        overflowed: set[int] = set()
        fetched, cmd_depth, capacity = 0, self.config.cmd_queue_depth, self.config.token_queue_depth
        progress = True
        while progress:
            progress = False
            while fetched < self.n:
                m = slot[fetched]
                if dispatched[m] - started[m] >= cmd_depth:
                    break
                dispatched[m] += 1
                fetched += 1
                progress = True
            for m in range(3):
                pops, pushes, pending = pop_masks[m], push_masks[m], to_push[m]
                while True:
                    while pending and len(queues[pending[0]]) < capacity:
                        queues[pending.pop(0)].append(last[m])
                    if pending:
                        if pending[0] not in overflowed:
                            overflowed.add(pending[0])
                            self._report_overflow(pending[0], order[m][started[m] - 1])
                        break
                    k = started[m]
                    if k == dispatched[m]:
                        break
                    need = _QUEUE_SETS[pops[k]]
                    if not all(queues[q] for q in need):
                        break
                    c = last[m]
                    for q in need:
                        c = tuple(map(max, c, queues[q].popleft()))
                    last[m] = clock[order[m][k]] = c[:m] + (k,) + c[m + 1 :]
                    started[m] = k + 1
                    pending.extend(_QUEUE_SETS[pushes[k]])
                    progress = True
        self.clock = clock
        if fetched < self.n or started != [len(idx) for idx in order] or any(to_push):
            self.clock = None
            counts = [len(q) for q in queues]
            self._report_deadlock(fetched, order, started, dispatched, to_push, pop_masks, counts)

    def _queue_masks(self, indices: np.ndarray, flag_column: int) -> list[int]:
        """Per instruction of one module, a bit mask of the token queues it pops (flag_column 4)
        or pushes (flag_column 2); bit q stands for TOKEN_QUEUES[q]."""
        mask = np.zeros(indices.size, dtype=np.int64)
        stage = self.stage[indices[0]] if indices.size else None
        for q, queue in enumerate(TOKEN_QUEUES):
            if queue[flag_column - 1] == stage:
                mask |= self.flags[queue[flag_column]][indices].astype(np.int64) << q
        return mask.tolist()

    def _report_overflow(self, q: int, i: int) -> None:
        name, src, push, dst, _ = TOKEN_QUEUES[q]
        self.problems.append(
            f"instruction {i} ({self._name(i)}): {push} into token queue {name} "
            f"({src.name.lower()}->{dst.name.lower()}) that already holds "
            f"{self.config.token_queue_depth} tokens (token_queue_depth); the "
            f"{dst.name.lower()} stage must pop before more are pushed"
        )

    def _report_deadlock(self, fetched, order, started, dispatched, to_push, pop_masks, tokens):
        blocked = []
        for m, stage in enumerate(Stage):
            k = started[m]
            if to_push[m]:
                i = order[m][k - 1]
                name = TOKEN_QUEUES[to_push[m][0]][0]
                blocked.append(
                    f"{stage.name.lower()} at instruction {i} ({self._name(i)}) waits for room "
                    f"in token queue {name}"
                )
            elif k < dispatched[m]:
                i = order[m][k]
                waits = [TOKEN_QUEUES[q] for q in _QUEUE_SETS[pop_masks[m][k]] if tokens[q] == 0]
                what = ", ".join(
                    f"a token in {q[0]} ({q[4]} from {q[1].name.lower()})" for q in waits
                )
                blocked.append(
                    f"{stage.name.lower()} at instruction {i} ({self._name(i)}) waits for {what}"
                )
        if fetched < self.n:
            stage = Stage(int(self.stage[fetched]))
            blocked.append(
                f"fetch at instruction {fetched} ({self._name(fetched)}) waits for room in the "
                f"full {stage.name.lower()} command queue ({self.config.cmd_queue_depth} entries)"
            )
        self.problems.append("deadlock: " + "; ".join(blocked))

    # ------------------------------------------------------------------------- FINISH
    def _check_finish(self) -> None:
        finish = np.flatnonzero(self.opcode == Opcode.FINISH)
        if not finish.size:
            self.problems.append(
                f"instruction {self.n}: missing FINISH (a Program must end with FINISH)"
            )
        elif finish[0] != self.n - 1:
            f = int(finish[0])
            self.problems.append(
                f"instruction {f}: FINISH is followed by {self.n - 1 - f} instruction(s) that "
                "never run (FINISH must be the last instruction)"
            )
