"""Phase 2, ranges: every LOAD/STORE stays inside its SRAM buffer and the DRAM image, every
GEMM/ALU has a non-empty micro-op range inside the UOP buffer and loops that run, and every ALU
opcode exists in the configuration (REQ immediates only use their defined bits)."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..isa import (
    ALU_OP_GATES,
    LOAD_ROUTES,
    REQ_RELU_BIT,
    REQ_SHIFT_MASK,
    STORE_TYPES,
    AluOp,
    MemType,
    available_alu_ops,
)
from .stream import Findings, Stream


@dataclasses.dataclass
class Extents:
    """What later phases need from this one: each LOAD/STORE's SRAM footprint (entries from
    sram_base) and which instructions are in range (`mem_ok`: active LOAD/STORE of a supported
    type inside SRAM and DRAM; `compute_ok`: GEMM/ALU with a valid micro-op range and loops)."""

    footprint: np.ndarray
    mem_ok: np.ndarray
    compute_ok: np.ndarray


def mem_extents(s: Stream) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SRAM footprint (entries), first and end DRAM element of each LOAD/STORE."""
    mem = s.cols["mem"]
    y, x = mem["y_size"], mem["x_size"]
    width = mem["x_pad_0"] + x + mem["x_pad_1"]
    footprint = (mem["y_pad_0"] + y + mem["y_pad_1"]) * width
    footprint = np.where(s.is_store, y * x, footprint)
    uop = s.is_load & (s.mem_type == MemType.UOP)
    footprint = np.where(uop, x, footprint)
    dram_end = mem["dram_base"] + np.maximum(y - 1, 0) * mem["x_stride"] + x
    dram_end = np.where(y == 0, mem["dram_base"], dram_end)
    dram_end = np.where(uop, mem["dram_base"] + x, dram_end)  # UOP loads ignore y_size
    return footprint, mem["dram_base"], dram_end


def check_mem_ranges(s: Stream) -> tuple[Findings, np.ndarray, np.ndarray]:
    """SRAM and DRAM bounds of every active LOAD/STORE; (findings, footprint, in range)."""
    out = Findings(s)
    mem = s.cols["mem"]
    footprint, dram_lo, dram_hi = mem_extents(s)
    ok = s.active_mem & (
        (s.is_load & np.isin(s.mem_type, list(LOAD_ROUTES)))
        | (s.is_store & np.isin(s.mem_type, STORE_TYPES))
    )
    dram_bytes = s.program.dram.size
    for mem_type in (*LOAD_ROUTES, *STORE_TYPES):
        sel = ok & (s.mem_type == mem_type)
        if not sel.any():
            continue
        depth, elem = s.config.depth[mem_type], s.config.elem_bytes[mem_type]
        over = sel & (mem["sram_base"] + footprint > depth)
        out.each(
            over,
            lambda i, d=depth, t=mem_type.name: (
                f"instruction {i} ({s.name(i)}): SRAM entries [{mem['sram_base'][i]}, "
                f"{mem['sram_base'][i] + footprint[i]}) from sram_base and sizes exceed the "
                f"{t} buffer (depth {d})"
            ),
        )
        outside = sel & (dram_hi * elem > dram_bytes)
        out.each(
            outside,
            lambda i, e=elem: (
                f"instruction {i} ({s.name(i)}): DRAM bytes [{dram_lo[i] * e}, "
                f"{dram_hi[i] * e}) from dram_base, y_size, x_size and x_stride lie outside the "
                f"{dram_bytes}-byte DRAM image"
            ),
        )
        ok &= ~over & ~outside
    return out, footprint, ok


def check_compute_fields(s: Stream) -> tuple[Findings, np.ndarray]:
    """Loop counts, micro-op range, ALU opcode availability, REQ immediates of GEMM/ALU;
    (findings, in range)."""
    out = Findings(s)
    compute = s.is_gemm | s.is_alu
    c = s.cols["gemm"]  # word 0 (reset_reg, uop_bgn, uop_end, iters) is shared with ALU
    depth = s.config.depth[MemType.UOP]
    for field in ("iter_out", "iter_in"):
        out.each(
            compute & (c[field] == 0),
            lambda i, f=field: f"instruction {i} ({s.name(i)}): {f} = 0 (valid: >= 1)",
        )
    empty = compute & (c["uop_end"] <= c["uop_bgn"])
    out.each(
        empty,
        lambda i: (
            f"instruction {i} ({s.name(i)}): uop_end {c['uop_end'][i]} <= uop_bgn "
            f"{c['uop_bgn'][i]} (valid: uop_bgn < uop_end)"
        ),
    )
    beyond = compute & (c["uop_end"] > depth)
    out.each(
        beyond,
        lambda i: (
            f"instruction {i} ({s.name(i)}): uop_end {c['uop_end'][i]} exceeds the UOP buffer "
            f"(depth {depth})"
        ),
    )
    ok = compute & ~empty & ~beyond & (c["iter_out"] > 0) & (c["iter_in"] > 0)
    alu = s.cols["alu"]
    valid = ", ".join(op.name for op in available_alu_ops(s.config))
    for op, field in ALU_OP_GATES.items():
        if not getattr(s.config, field):
            out.each(
                s.is_alu & (alu["alu_opcode"] == op),
                lambda i, op=op, field=field: (
                    f"instruction {i}: ALU alu_opcode {op.name} needs a configuration with "
                    f"{field} (config {s.config.name!r} has none; valid: {valid})"
                ),
            )
    stray = alu["imm"] & ~(REQ_SHIFT_MASK | REQ_RELU_BIT)
    out.each(
        s.is_alu & (alu["alu_opcode"] == AluOp.REQ) & (stray != 0),
        lambda i: (
            f"instruction {i} (ALU REQ): imm {alu['imm'][i]} sets bits other than the shift "
            "(bits 4:0) and relu (bit 5) (valid: 0..63)"
        ),
    )
    return out, ok


def check_ranges(s: Stream) -> tuple[Findings, Extents]:
    """Both range checks; the extents later phases use."""
    out, footprint, mem_ok = check_mem_ranges(s)
    compute_out, compute_ok = check_compute_fields(s)
    out.extend(compute_out)
    return out, Extents(footprint, mem_ok, compute_ok)
