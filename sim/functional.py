"""`fsim`: the functional, bit-exact simulator of a Program (no clock).

Each instruction is applied whole, vectorized with numpy over its elements and micro-ops. The
semantics are the toolkit's ISA decisions (docs/architecture.md, "ISA semantics"): STORE copies
the OUT buffer, which only GEMM and ALU micro-ops write (OUT[d] = low 8 bits of the new ACC[d]);
GEMM reset zeroes ACC and OUT; SHR takes a signed amount; MUL and REQ exist only if the
configuration enables them.

Dependence flags are ignored: a valid Program's tokens only order the load, compute and store
modules so that running its single instruction stream in order gives the same result. A Program
whose tokens allow a different outcome (a race) is invalid, and fsim reports the in-order one.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from vta.config import VTAConfig
from vta.device import Device, check_budget, until_finish
from vta.errors import BudgetError, DeviceError
from vta.isa import (
    LOAD_ROUTES,
    STORE_TYPES,
    AluInsn,
    FinishInsn,
    GemmInsn,
    Insn,
    MemInsn,
    MemType,
    Module,
    available_alu_ops,
    decode_uops,
    insn_module,
)
from vta.program import Program
from vta.stats import Stats

from ._alu import alu_update
from ._gemm import accumulate, tile_products

# SRAM contents are undefined at reset; this byte makes reads of unwritten SRAM stand out in
# differential tests (0xA5 = -91 as int8), where zeros would often hide them.
UNDEFINED_BYTE = 0xA5

# Micro-ops per vectorized batch: bounds the memory of one step (a GEMM instruction may hold up
# to 2**41 micro-ops) while keeping numpy's per-call overhead negligible.
BATCH_UOPS = 1 << 13
# The default step budget of a run: one step per instruction and per micro-op executed (about a
# minute of numpy work); a longer run raises BudgetError before its first step past the budget.
DEFAULT_MAX_STEPS = 1 << 30


class FunctionalCore:
    """Architectural state (SRAMs + DRAM image) and per-instruction semantics."""

    def __init__(self, config: VTAConfig, dram: np.ndarray, stats: Stats):
        if dram.dtype != np.uint8 or dram.ndim != 1:
            raise DeviceError(
                f"DRAM image must be a 1-D uint8 array, got {dram.dtype} {dram.shape}"
            )
        self.config = config
        self.dram = dram
        self.stats = stats
        c = config
        self.elem_bytes, self.depth = c.elem_bytes, c.depth
        # Raw bytes per buffer, one row per element; typed views below alias them.
        self.sram = {
            t: np.full((self.depth[t], self.elem_bytes[t]), UNDEFINED_BYTE, dtype=np.uint8)
            for t in self.depth
        }
        self.inp = self.sram[MemType.INP].view(np.int8).reshape(-1, c.batch, c.block_in)
        self.wgt = self.sram[MemType.WGT].view(np.int8).reshape(-1, c.block_out, c.block_in)
        self.acc = self.sram[MemType.ACC].view("<i4").reshape(-1, c.batch * c.block_out)
        self.out = self.sram[MemType.OUT].view(np.int8).reshape(-1, c.batch * c.block_out)
        self.uop_words = self.sram[MemType.UOP].view("<u4").reshape(-1)
        self.uops = decode_uops(self.uop_words, c)  # (depth, 3): dst, src, wgt; kept in sync
        self.alu_ops = available_alu_ops(c)

    # ------------------------------------------------------------------------------ dispatch
    def execute(self, insn: Insn, index: int) -> None:
        """Apply one instruction (number `index` in the stream) and update the stats counters."""
        name = insn.opcode.name
        self.stats.instructions[name] = self.stats.instructions.get(name, 0) + 1
        if isinstance(insn, MemInsn):
            if insn.is_nop:
                return
            if insn.is_store:
                self._store(insn, index)
            else:
                self._load(insn, index)
        elif isinstance(insn, GemmInsn):
            self._gemm(insn, index)
        elif isinstance(insn, AluInsn):
            self._alu(insn, index)
        elif not isinstance(insn, FinishInsn):
            raise DeviceError(f"instruction {index}: not an instruction: {insn!r}")

    # ------------------------------------------------------------------------------ memory
    def _dram_rows(self, insn: MemInsn, index: int, elem_bytes: int) -> np.ndarray:
        """A (y_size, x_size * elem_bytes) strided byte view of the DRAM rows `insn` touches."""
        what = f"instruction {index}: {insn.opcode.name} {insn.memory_type.name}"
        if insn.dram_base < 0 or insn.x_stride < 0 or insn.y_size < 0 or insn.x_size < 0:
            raise DeviceError(f"{what} fields dram_base, y_size, x_size and x_stride must be >= 0")
        n_elems = self.dram.size // elem_bytes
        end = insn.dram_base + max(insn.y_size - 1, 0) * insn.x_stride + insn.x_size
        if insn.y_size and end > n_elems:
            raise DeviceError(
                f"{what} field 'dram_base' = {insn.dram_base} with y_size {insn.y_size}, "
                f"x_stride {insn.x_stride}, x_size {insn.x_size} reaches DRAM element {end - 1}; "
                f"the {self.dram.size}-byte image holds {n_elems} elements of {elem_bytes} bytes"
            )
        return np.lib.stride_tricks.as_strided(
            self.dram[insn.dram_base * elem_bytes :],
            shape=(insn.y_size, insn.x_size * elem_bytes),
            strides=(insn.x_stride * elem_bytes, 1),
            writeable=insn.is_store,
        )

    def _sram_range(self, insn: MemInsn, index: int, mem: MemType, count: int) -> slice:
        if insn.sram_base < 0 or insn.sram_base + count > self.depth[mem]:
            raise DeviceError(
                f"instruction {index}: {insn.opcode.name} {insn.memory_type.name} field "
                f"'sram_base' = {insn.sram_base} with {count} elements ends at "
                f"{insn.sram_base + count - 1}; the {mem.name} buffer has {self.depth[mem]} "
                f"entries (valid: 0..{self.depth[mem] - 1})"
            )
        return slice(insn.sram_base, insn.sram_base + count)

    def _check_unpadded(self, insn: MemInsn, index: int, reason: str) -> None:
        for field in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1"):
            if getattr(insn, field):
                raise DeviceError(
                    f"instruction {index}: {insn.opcode.name} {insn.memory_type.name} field "
                    f"{field!r} = {getattr(insn, field)}: {reason} (valid: 0)"
                )

    def _load(self, insn: MemInsn, index: int) -> None:
        mem = insn.memory_type
        if mem not in LOAD_ROUTES:
            raise DeviceError(
                f"instruction {index}: LOAD field 'memory_type' = {mem.name} is not loadable "
                f"(valid: {', '.join(m.name for m in LOAD_ROUTES)})"
            )
        if mem == MemType.UOP:
            self._check_unpadded(insn, index, "micro-op loads are contiguous")
            if insn.y_size != 1:
                raise DeviceError(
                    f"instruction {index}: LOAD UOP field 'y_size' = {insn.y_size}: micro-op "
                    "loads are contiguous (valid: 1)"
                )
        elif mem == MemType.WGT:
            self._check_unpadded(insn, index, "weight loads take no padding")
        eb = self.elem_bytes[mem]
        rows = self._dram_rows(insn, index, eb)
        width = insn.x_pad_0 + insn.x_size + insn.x_pad_1
        height = insn.y_pad_0 + insn.y_size + insn.y_pad_1
        span = self._sram_range(insn, index, mem, width * height)
        tile = self.sram[mem][span].reshape(height, width * eb)
        tile[...] = 0
        x0 = insn.x_pad_0 * eb
        tile[insn.y_pad_0 : insn.y_pad_0 + insn.y_size, x0 : x0 + insn.x_size * eb] = rows
        if mem == MemType.UOP:
            self.uops[span] = decode_uops(self.uop_words[span], self.config)
        key = mem.name.lower()
        self.stats.bytes_loaded[key] = self.stats.bytes_loaded.get(key, 0) + rows.size

    def _store(self, insn: MemInsn, index: int) -> None:
        if insn.memory_type not in STORE_TYPES:
            raise DeviceError(
                f"instruction {index}: STORE field 'memory_type' = {insn.memory_type.name} "
                f"(valid: {', '.join(m.name for m in STORE_TYPES)})"
            )
        self._check_unpadded(insn, index, "stores take no padding")
        eb = self.elem_bytes[MemType.OUT]
        span = self._sram_range(insn, index, MemType.OUT, insn.y_size * insn.x_size)
        src = self.sram[MemType.OUT][span].reshape(insn.y_size, insn.x_size * eb)
        rows = self._dram_rows(insn, index, eb)
        if insn.x_stride < insn.x_size and insn.y_size > 1:
            for y in range(insn.y_size):  # overlapping rows: the last row written wins
                rows[y] = src[y]
        else:
            rows[...] = src
        self.stats.bytes_stored += src.size

    # ------------------------------------------------------------------------------ compute
    def _uop_batches(
        self, insn: GemmInsn | AluInsn, index: int, fields: tuple[tuple[str, int, MemType], ...]
    ) -> Iterator[list[np.ndarray]]:
        """SRAM indices of the instruction's micro-ops in (i, j, k) order, in bounded batches.

        `fields` names (field, uop column, buffer) triples; each batch is a list of one index
        array per field. Every index is range-checked before anything executes.
        """
        name = insn.opcode.name
        for field in ("uop_bgn", "iter_out", "iter_in") + tuple(
            f"{f}_factor_{loop}" for f, _, _ in fields for loop in ("out", "in")
        ):
            if getattr(insn, field) < 0:
                raise DeviceError(f"instruction {index}: {name} field {field!r} must be >= 0")
        if insn.uop_end > self.depth[MemType.UOP]:
            raise DeviceError(
                f"instruction {index}: {name} field 'uop_end' = {insn.uop_end} exceeds the UOP "
                f"buffer (valid: <= {self.depth[MemType.UOP]})"
            )
        kernel = self.uops[insn.uop_bgn : max(insn.uop_bgn, insn.uop_end)]
        n_iter = insn.iter_out * insn.iter_in
        if not kernel.size or not n_iter:
            return
        offsets = []
        for field, col, mem in fields:
            f_out = getattr(insn, f"{field}_factor_out")
            f_in = getattr(insn, f"{field}_factor_in")
            k = int(kernel[:, col].argmax())
            top = int(kernel[k, col]) + (insn.iter_out - 1) * f_out + (insn.iter_in - 1) * f_in
            if top >= self.depth[mem]:
                raise DeviceError(
                    f"instruction {index}: {name} {field} index uop[{insn.uop_bgn + k}].{field}_idx"
                    f" + (iter_out-1)*{field}_factor_out + (iter_in-1)*{field}_factor_in = {top} "
                    f"is outside the {mem.name} buffer (valid: 0..{self.depth[mem] - 1})"
                )
            offsets.append((col, f_out, f_in))
        step = max(1, BATCH_UOPS // len(kernel))
        for first in range(0, n_iter, step):
            i, j = np.divmod(np.arange(first, min(n_iter, first + step)), insn.iter_in)
            yield [
                (kernel[None, :, col] + (i * f_out + j * f_in)[:, None]).reshape(-1)
                for col, f_out, f_in in offsets
            ]

    def _gemm(self, insn: GemmInsn, index: int) -> None:
        fields = (("dst", 0, MemType.ACC), ("src", 1, MemType.INP), ("wgt", 2, MemType.WGT))
        for dst, src, wgt in self._uop_batches(insn, index, fields):
            self.stats.gemm_uops += dst.size
            if insn.reset_reg:
                self.acc[dst] = 0
                self.out[dst] = 0
                continue
            self.stats.macs += dst.size * self.config.macs_per_cycle
            owner, prod = tile_products(self.inp, self.wgt, src, wgt)
            touched = accumulate(self.acc, dst, owner, prod)
            self.out[touched] = self.acc[touched].astype(np.int8)

    def _alu(self, insn: AluInsn, index: int) -> None:
        ops = self.alu_ops
        if insn.alu_opcode not in ops:
            raise DeviceError(
                f"instruction {index}: ALU field 'alu_opcode' = {insn.alu_opcode.name} is not "
                f"available on configuration {self.config.name!r} "
                f"(valid: {', '.join(op.name for op in ops)})"
            )
        fields = (("dst", 0, MemType.ACC), ("src", 1, MemType.ACC))
        for dst, src in self._uop_batches(insn, index, fields):
            self.stats.alu_uops += dst.size
            alu_update(
                self.acc,
                insn.alu_opcode,
                dst,
                None if insn.use_imm else src,
                insn.imm,
                self.config.acc_width,
                self.config.out_width,
            )
            touched = np.flatnonzero(np.bincount(dst, minlength=self.acc.shape[0]))
            self.out[touched] = self.acc[touched].astype(np.int8)


class FunctionalSimulator(Device):
    """The `fsim` device: runs a Program's instruction stream in order, bit-exact, no cycles.
    Option `max_steps`: its budget of instructions plus micro-ops (a longer run raises
    BudgetError before the instruction that would exceed it)."""

    name = "fsim"

    def __init__(self, max_steps: int | None = None, **options):
        if options:
            raise DeviceError(f"device 'fsim' takes the option max_steps, got {sorted(options)}")
        self.max_steps = check_budget(
            DEFAULT_MAX_STEPS if max_steps is None else max_steps, "max_steps", self.name
        )

    def execute(self, program: Program, dram: np.ndarray) -> tuple[np.ndarray, Stats]:
        """Run `program` until its FINISH on a copy of `dram`; return the final image and Stats."""
        image = np.array(dram, dtype=np.uint8, copy=True).reshape(-1)
        stats = self.new_stats(program.config)
        core = FunctionalCore(program.config, image, stats)
        insns = until_finish(program)
        steps = 0
        for index, insn in enumerate(insns):
            need = 1 + _uop_count(insn)
            if steps + need > self.max_steps:
                raise BudgetError(self._over_budget(insns, index, steps, need))
            steps += need
            core.execute(insn, index)
        return image, stats

    def _over_budget(self, insns: list[Insn], index: int, steps: int, need: int) -> str:
        lines = [
            f"device 'fsim': step limit {self.max_steps:,} exceeded: instruction {index} "
            f"({insns[index].opcode.name}) needs {need:,} steps after {steps:,} (one per "
            "instruction and micro-op; raise max_steps)"
        ]
        for m in Module:
            j = next((k for k in range(index, len(insns)) if insn_module(insns[k]) == m), None)
            if j is None:
                state = "finished"
            else:
                verb = "busy with" if j == index else "waiting at"
                state = f"{verb} instruction {j} ({insns[j].opcode.name})"
            lines.append(f"{m.label}: {state}")
        return "\n  ".join(lines)


def _uop_count(insn: Insn) -> int:
    """Micro-ops a GEMM or ALU instruction executes (0 for the others)."""
    if not isinstance(insn, (GemmInsn, AluInsn)):
        return 0
    return max(0, insn.uop_end - insn.uop_bgn) * max(0, insn.iter_out) * max(0, insn.iter_in)
