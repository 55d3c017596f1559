"""The SRAM entries each instruction reads and writes, in program order.

LOAD/STORE touch their footprint. GEMM/ALU touch what their micro-op kernel addresses under its
two affine loops; micro-ops come from the UOP buffer as earlier LOAD UOPs filled it from the
initial DRAM image. Each distinct kernel instruction (same fields but tokens, same micro-ops) is
analysed once, and instructions with the same accesses share one `Access` object, which the
later phases use to do per-access work once. Findings here are micro-op ranges: micro-ops from
UOP entries no LOAD UOP wrote, indices beyond a buffer, ALU micro-ops with a weight index.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..isa import MemType, Opcode, decode_uops
from .ranges import Extents
from .stream import Findings, Stream

_DENSE_SUMSET = 1 << 16  # largest |A|*|B| for which a sumset is formed explicitly
_DEP_BITS = 0x78  # header bits 3..6: pop_prev, pop_next, push_prev, push_next

Rows = slice | np.ndarray  # SRAM entries: a slice when contiguous, else sorted distinct indices


@dataclasses.dataclass
class Access:
    """What one instruction reads and writes: (memory type, operand name, entries) each."""

    reads: list[tuple[MemType, str, Rows]]
    writes: list[tuple[MemType, Rows]]
    first: int  # the first instruction with this access (instances of one access share it)
    dst_sequence: np.ndarray | None = None  # GEMM: ACC rows in execution order of a micro-op
    loops: tuple[int, int, int, int] = (1, 1, 0, 0)  # GEMM: iter_out, iter_in, dst factors
    uop_bgn: int = 0  # GEMM: the first micro-op's UOP entry


def sumset(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The distinct values a_i + b_j (non-negative integers)."""
    a, b = np.unique(a), np.unique(b)
    if a.size * b.size <= _DENSE_SUMSET:
        return np.unique(np.add.outer(a, b))
    hits = np.convolve((np.bincount(a) > 0).astype(np.int32), (np.bincount(b) > 0).astype(np.int32))
    return np.flatnonzero(hits)


def as_rows(idx: np.ndarray) -> Rows:
    """Sorted distinct SRAM indices as a slice when contiguous (cheaper to index repeatedly)."""
    if idx.size and idx[-1] - idx[0] + 1 == idx.size:
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return idx


def trace_accesses(s: Stream, extents: Extents) -> tuple[Findings, list[Access | None]]:
    """Per instruction, its Access (None where an earlier phase found it out of range, for a
    NOP, and for LOAD UOP, whose micro-ops are traced here)."""
    out = Findings(s)
    mem = s.cols["mem"]
    uop_sram = np.full(s.config.depth[MemType.UOP], -1, dtype=np.int64)
    dram_words = s.program.dram[: s.program.dram.size // 4 * 4].view("<u4")
    accesses: list[Access | None] = [None] * s.n
    kernels: dict[tuple, Access | None] = {}
    todo = np.flatnonzero(extents.mem_ok | extents.compute_ok)
    opcode, mem_type = s.opcode.tolist(), s.mem_type.tolist()
    base, footprint = mem["sram_base"].tolist(), extents.footprint.tolist()
    dram_base = mem["dram_base"].tolist()
    bgn, end = s.cols["gemm"]["uop_bgn"].tolist(), s.cols["gemm"]["uop_end"].tolist()
    w0, w1 = s.words[:, 0].tolist(), s.words[:, 1].tolist()
    load, store, uop = int(Opcode.LOAD), int(Opcode.STORE), int(MemType.UOP)
    mem_accesses: dict[tuple, Access] = {}  # LOAD/STORE instances of one footprint share one
    for i in todo.tolist():
        op = opcode[i]
        if op in (load, store):
            if mem_type[i] == uop:
                uop_sram[base[i] : base[i] + footprint[i]] = dram_words[
                    dram_base[i] : dram_base[i] + footprint[i]
                ]
                continue
            key = (op, mem_type[i], base[i], footprint[i])
            access = mem_accesses.get(key)
            if access is None:
                t, rows = MemType(mem_type[i]), slice(base[i], base[i] + footprint[i])
                reads = [(t, "data", rows)] if op == store else []
                access = mem_accesses[key] = Access(reads, [] if reads else [(t, rows)], i)
            accesses[i] = access
            continue
        key = (w0[i] & ~_DEP_BITS, w1[i], uop_sram[bgn[i] : end[i]].tobytes())
        if key not in kernels:
            kernels[key] = _kernel_access(s, i, uop_sram, out)
        accesses[i] = kernels[key]
    return out, accesses


def _kernel_access(s: Stream, i: int, uop_sram: np.ndarray, out: Findings) -> Access | None:
    """The entries one GEMM/ALU instruction touches (None, with a finding, if out of range)."""
    is_gemm = s.opcode[i] == Opcode.GEMM
    f = s.cols["gemm" if is_gemm else "alu"]
    bgn, end = int(f["uop_bgn"][i]), int(f["uop_end"][i])
    words = uop_sram[bgn:end]
    name = s.name(i)
    if (words < 0).any():
        missing = bgn + int(np.flatnonzero(words < 0)[0])
        out.capped(
            "micro-op",
            f"instruction {i} ({name}): micro-ops [{bgn}, {end}) include UOP entry {missing} "
            "that no earlier LOAD UOP wrote",
        )
        return None
    uops = decode_uops(words.astype(np.uint32), s.config)
    io, ii = int(f["iter_out"][i]), int(f["iter_in"][i])
    reset = bool(f["reset_reg"][i]) and is_gemm
    use_imm = not is_gemm and bool(f["use_imm"][i])
    acc, inp, wgt = MemType.ACC, MemType.INP, MemType.WGT
    # (micro-op field, column, factor prefix, memory, read?)
    operands = [("dst_idx", 0, "dst", acc, not reset)]
    if is_gemm:
        operands += [("src_idx", 1, "src", inp, not reset), ("wgt_idx", 2, "wgt", wgt, not reset)]
    else:
        operands.append(("src_idx", 1, "src", acc, not use_imm))
        if uops[:, 2].any():
            k = int(np.flatnonzero(uops[:, 2])[0])
            out.capped(
                "micro-op",
                f"instruction {i} ({name}): micro-op {bgn + k} has wgt_idx {int(uops[k, 2])} "
                "(ALU micro-ops take wgt_idx 0)",
            )
    index_sets = {}
    for field, col, factor, mem_type, _ in operands:
        fo, fi = int(f[f"{factor}_factor_out"][i]), int(f[f"{factor}_factor_in"][i])
        top = int(uops[:, col].max()) + (io - 1) * fo + (ii - 1) * fi
        depth = s.config.depth[mem_type]
        if top >= depth:
            out.capped(
                "micro-op",
                f"instruction {i} ({name}): micro-op {field} reaches {mem_type.name} entry {top} "
                f"over iter_out={io} x iter_in={ii} with {factor}_factor_out={fo}, "
                f"{factor}_factor_in={fi} (depth {depth})",
            )
            return None
        offsets = sumset(np.arange(io) * fo, np.arange(ii) * fi)
        index_sets[field] = sumset(uops[:, col], offsets)
    dst = as_rows(index_sets["dst_idx"])
    access = Access(
        [(t, field, as_rows(index_sets[field])) for field, _, _, t, read in operands if read],
        [(acc, dst), (MemType.OUT, dst)],
        i,
    )
    if is_gemm:
        access.dst_sequence = uops[:, 0]
        access.loops = (io, ii, int(f["dst_factor_out"][i]), int(f["dst_factor_in"][i]))
        access.uop_bgn = bgn
    return access
