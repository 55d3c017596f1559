"""`Stats`: what a device reports about one run of a Program."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING

from .isa import AluInsn, GemmInsn, Insn, MemInsn, insn_module

if TYPE_CHECKING:
    from .config import VTAConfig

MODULES = ("fetch", "load", "compute", "store")
STALL_CAUSES = ("token", "queue", "dram")


@dataclasses.dataclass
class ModuleStats:
    """Busy and stall cycles of one module; stalls split by cause."""

    busy: int = 0
    stall_token: int = 0
    stall_queue: int = 0
    stall_dram: int = 0
    instructions: int = 0

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Stats:
    """Counters of one run. `cycles` is None on devices without a clock (fsim)."""

    device: str
    clock_mhz: float
    macs_per_cycle: int
    cycles: int | None = None
    instructions: dict[str, int] = dataclasses.field(default_factory=dict)
    modules: dict[str, ModuleStats] = dataclasses.field(
        default_factory=lambda: {m: ModuleStats() for m in MODULES}
    )
    bytes_loaded: dict[str, int] = dataclasses.field(default_factory=dict)
    bytes_stored: int = 0
    gemm_uops: int = 0
    alu_uops: int = 0
    macs: int = 0

    def count_stream(self, insns: list[Insn], cfg: VTAConfig) -> None:
        """Instruction, micro-op, MAC and DRAM byte counts: data-independent, so taken from the
        stream (for devices that only report cycles)."""
        self.modules["fetch"].instructions = len(insns)
        for insn in insns:
            name = insn.opcode.name
            self.instructions[name] = self.instructions.get(name, 0) + 1
            self.modules[insn_module(insn).label].instructions += 1
            if isinstance(insn, MemInsn) and not insn.is_nop:
                nbytes = insn.y_size * insn.x_size * cfg.elem_bytes[insn.memory_type]
                if insn.is_store:
                    self.bytes_stored += nbytes
                else:
                    kind = insn.memory_type.name.lower()
                    self.bytes_loaded[kind] = self.bytes_loaded.get(kind, 0) + nbytes
            if isinstance(insn, (GemmInsn, AluInsn)):
                uops = insn.uop_count
                if isinstance(insn, GemmInsn):
                    self.gemm_uops += uops
                    if not insn.reset_reg:
                        self.macs += uops * cfg.macs_per_cycle
                else:
                    self.alu_uops += uops

    @property
    def total_instructions(self) -> int:
        return sum(self.instructions.values())

    @property
    def utilization(self) -> float | None:
        """Useful MACs / (cycles x MACs per cycle)."""
        if not self.cycles:
            return None
        return self.macs / (self.cycles * self.macs_per_cycle)

    @property
    def seconds(self) -> float | None:
        return None if self.cycles is None else self.cycles / (self.clock_mhz * 1e6)

    @property
    def gops(self) -> float | None:
        """Achieved int8 GOPS (2 ops per MAC) at the configured clock."""
        secs = self.seconds
        return None if not secs else 2 * self.macs / secs / 1e9

    def to_dict(self) -> dict:
        return {
            "device": self.device,
            "cycles": self.cycles,
            "instructions": self.total_instructions,
            "instructions_by_opcode": dict(self.instructions),
            "utilization": self.utilization,
            "gops": self.gops,
            "clock_mhz": self.clock_mhz,
            "macs": self.macs,
            "gemm_uops": self.gemm_uops,
            "alu_uops": self.alu_uops,
            "bytes_loaded": dict(self.bytes_loaded),
            "bytes_stored": self.bytes_stored,
            "modules": {name: m.to_dict() for name, m in self.modules.items()},
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def report(self) -> str:
        """A table for people."""

        def fmt(value, spec: str = ",") -> str:
            return "n/a" if value is None else format(value, spec)

        lines = [
            f"device          {self.device}",
            f"cycles          {fmt(self.cycles)}",
            f"instructions    {self.total_instructions:,}  "
            + "  ".join(f"{k}={v}" for k, v in sorted(self.instructions.items())),
            f"MACs            {self.macs:,}  (GEMM uops {self.gemm_uops:,}, "
            f"ALU uops {self.alu_uops:,})",
            f"utilization     {fmt(self.utilization, '.3f')}",
            f"GOPS            {fmt(self.gops, '.2f')} at {self.clock_mhz:g} MHz",
            "bytes loaded    "
            + "  ".join(f"{k}={v:,}" for k, v in sorted(self.bytes_loaded.items())),
            f"bytes stored    {self.bytes_stored:,}",
        ]
        if self.cycles is not None and not any(m.busy for m in self.modules.values()):
            lines.append("modules         busy/stall cycles not measured by this device")
        elif self.cycles is not None:
            lines.append("")
            lines.append(
                f"{'module':<8} {'insns':>8} {'busy':>12} {'stall:token':>12} "
                f"{'stall:queue':>12} {'stall:dram':>12}"
            )
            for name, m in self.modules.items():
                lines.append(
                    f"{name:<8} {m.instructions:>8,} {m.busy:>12,} {m.stall_token:>12,} "
                    f"{m.stall_queue:>12,} {m.stall_dram:>12,}"
                )
        return "\n".join(lines)
