"""Critical-path estimate of a yosys `synth_xilinx` netlist (its `write_json` output).

The longest register-to-register path, in cells and in nanoseconds, with the per-cell delays
below (Xilinx 7-series data-sheet values for speed grade -1, rounded; docs/fpga.md) and a
fixed allowance for every routed net. It is an estimate, not Vivado's timing: placement and
real routing are unknown, so the net allowance is deliberately generous (0.5 ns per net; a
short net in a placed 7-series design takes 0.2-0.4 ns, a long or high-fanout one more).

Start points: flip-flop outputs (clock-to-out), block-RAM outputs, registered DSP48 outputs,
the design's input ports (driven by a register of the interconnect). End points: flip-flop and
block-RAM inputs, registered DSP48 inputs (with setup) and the output ports.

An UltraScale+ netlist (RAMB*E2, DSP48E2, CARRY8, MUXF9 cells, which take their 7-series
counterparts' arcs) has every delay, nets included, scaled by `DELAY_SCALE["xcup"]`: the ratio
of one path both families' data sheets give, a DSP48 multiply between its input and P registers
without pipeline registers (UltraScale+ speed grade -1 at 0.85 V: 338 MHz, 2.96 ns; the table
below: register clock to out + multiplier + input setup, 4.53 ns).
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

# Delays in ns.
NET = 0.50  # allowance per routed net between two cells
FF_CLK_TO_Q = 0.46
FF_SETUP = 0.10
LUT = 0.12  # LUT1..LUT6 (and INV), any input to the output
MUXF = 0.30  # MUXF7/MUXF8 (fed from LUTs or MUXF7s by dedicated wires: no net allowance)
CARRY_DATA = 0.45  # CARRY4 S/DI/CYINIT to CO/O
CARRY_CHAIN = 0.11  # CARRY4 CI to CO/O (dedicated carry wire: no net allowance)
BRAM_CLK_TO_OUT = 2.45  # RAMB18E1/RAMB36E1 without the output register
BRAM_CLK_TO_OUT_REG = 0.88  # ... with DO_REG = 1
BRAM_SETUP = 0.50
DSP_MULT = 3.90  # DSP48E1 A/B through the multiplier to P, no pipeline registers
DSP_MULT_TO_MREG = 2.40  # A/B to the M register (setup)
DSP_MREG_TO_P = 1.60  # M register clock to P (no P register)
DSP_C_TO_P = 1.70  # C (or PCIN) through the post-adder to P
DSP_INPUT_SETUP = 0.30  # A/B/C to their input registers
DSP_CLK_TO_P = 0.33  # P register clock to out

# Per family, the factor on every delay above (a uniform scale keeps the critical path's cells).
DELAY_SCALE = {"xc7": 1.0, "xcup": (1000.0 / 338) / (DSP_CLK_TO_P + DSP_MULT + DSP_INPUT_SETUP)}

FLIP_FLOPS = {"FDRE", "FDSE", "FDCE", "FDPE"}
LUTS = {f"LUT{n}" for n in range(1, 7)} | {"INV"}
BLOCK_RAMS = {"RAMB18E1", "RAMB36E1", "RAMB18E2", "RAMB36E2"}
DSPS = {"DSP48E1", "DSP48E2"}
CARRIES = {"CARRY4", "CARRY8"}
MUXES = {"MUXF7", "MUXF8", "MUXF9"}
DEDICATED = {(c, "CI") for c in CARRIES} | {(m, i) for m in MUXES for i in ("I0", "I1")}
CLOCKS = {"BUFG", "BUFGCTRL"}


@dataclasses.dataclass
class CriticalPath:
    """The critical path: delay, combinational cells on it, and its cells start to end with the
    net each drives (the end point's: the net it reads), named by the RTL's signals where yosys
    kept them."""

    delay_ns: float
    levels: int
    cells: list[tuple[str, str]]  # (type, name), start point first
    nets: list[str] = dataclasses.field(default_factory=list)

    @property
    def fmax_mhz(self) -> float:
        return 1000.0 / self.delay_ns


def _int(value) -> int:
    """A yosys parameter: a binary string (undefined bits read as 0) or an integer."""
    if isinstance(value, str):
        bits = value.replace("x", "0").replace("z", "0")
        return int(bits, 2) if bits and set(bits) <= {"0", "1"} else 0
    return int(value)


def _net_names(module: dict) -> dict[int, str]:
    """bit -> `signal[index]`, preferring names from the RTL over yosys's generated ones."""
    names: dict[int, tuple[int, str]] = {}
    for net, info in module.get("netnames", {}).items():
        hidden = int(info.get("hide_name", 0))
        for i, bit in enumerate(info["bits"]):
            if isinstance(bit, int) and (bit not in names or names[bit][0] > hidden):
                names[bit] = (hidden, f"{net}[{i}]")
    return {bit: name for bit, (_, name) in names.items()}


class _Netlist:
    def __init__(self, module: dict, family: str):
        self.scale = DELAY_SCALE[family]
        self.cells = module["cells"]
        self.names = _net_names(module)
        self.driver: dict[int, tuple[str, str]] = {}  # bit -> (cell, output port)
        for name, cell in self.cells.items():
            for port, direction in cell.get("port_directions", {}).items():
                if direction == "output":
                    for bit in cell["connections"].get(port, []):
                        if isinstance(bit, int):
                            self.driver[bit] = (name, port)
        self.arrival: dict[tuple[str, str], float] = {}
        self.level: dict[tuple[str, str], int] = {}
        self.came_from: dict[tuple[str, str], tuple[str, str] | None] = {}

    def params(self, name: str) -> dict[str, int]:
        return {k: _int(v) for k, v in self.cells[name].get("parameters", {}).items()}

    def source_time(self, name: str, port: str) -> float | None:
        """Clock-to-out if (cell, output port) starts a path, else None (combinational)."""
        kind = self.cells[name]["type"]
        if kind in FLIP_FLOPS:
            return FF_CLK_TO_Q
        if kind in BLOCK_RAMS:
            # port A's data outputs: DOADO, DOPADOP (E1), DOUTADOUT, DOUTPADOUTP (E2)
            reg = self.params(name).get("DOA_REG" if "ADO" in port else "DOB_REG", 0)
            return BRAM_CLK_TO_OUT_REG if reg else BRAM_CLK_TO_OUT
        if kind in DSPS:
            p = self.params(name)
            if p.get("PREG", 0):
                return DSP_CLK_TO_P
            if p.get("MREG", 0):
                return DSP_MREG_TO_P
            return None
        if kind == "IBUF" or kind in CLOCKS:
            return FF_CLK_TO_Q if kind == "IBUF" else 0.0
        return None

    def arcs(self, name: str, port: str) -> list[tuple[str, float]]:
        """(input port, delay) of the combinational arcs into an output port."""
        kind = self.cells[name]["type"]
        inputs = [p for p, d in self.cells[name].get("port_directions", {}).items() if d == "input"]
        if kind in LUTS:
            return [(p, LUT) for p in inputs]
        if kind in MUXES:
            return [(p, MUXF) for p in inputs]
        if kind in CARRIES:
            return [(p, CARRY_CHAIN if p == "CI" else CARRY_DATA) for p in inputs]
        if kind in DSPS:
            p = self.params(name)
            arcs = [("C", DSP_C_TO_P), ("PCIN", DSP_C_TO_P)] if not p.get("CREG", 0) else []
            if not p.get("MREG", 0) and not p.get("AREG", 0) and not p.get("BREG", 0):
                arcs += [("A", DSP_MULT), ("B", DSP_MULT)]
            return arcs
        if kind in ("OBUF", "BUF"):
            return [(p, 0.0) for p in inputs]
        return []

    def endpoint_setup(self, name: str, port: str) -> float | None:
        """Setup time if a cell input port ends a path, else None."""
        kind = self.cells[name]["type"]
        if kind in FLIP_FLOPS:
            return None if port == "C" else FF_SETUP
        if kind in BLOCK_RAMS:
            return None if port.startswith("CLK") else BRAM_SETUP
        if kind in DSPS:
            p = self.params(name)
            if port in ("A", "B"):
                if p.get("AREG", 0) or p.get("BREG", 0):
                    return DSP_INPUT_SETUP
                if p.get("MREG", 0):
                    return DSP_MULT_TO_MREG
                return DSP_MULT if p.get("PREG", 0) else None
            if port in ("C", "PCIN"):
                if p.get("CREG", 0) and port == "C":
                    return DSP_INPUT_SETUP
                return DSP_C_TO_P if p.get("PREG", 0) else None
            return None
        if kind == "OBUF":
            return FF_SETUP
        return None

    def bits_in(self, name: str, port: str) -> list[int]:
        return [b for b in self.cells[name]["connections"].get(port, []) if isinstance(b, int)]

    def resolve(self, start: tuple[str, str]) -> None:
        """Arrival times of `start` and everything it depends on (iterative DFS)."""
        stack = [start]
        while stack:
            node = stack[-1]
            if node in self.arrival:
                stack.pop()
                continue
            name, port = node
            t0 = self.source_time(name, port)
            if t0 is not None:
                self.arrival[node], self.level[node], self.came_from[node] = t0, 0, None
                stack.pop()
                continue
            kind = self.cells[name]["type"]
            pending, best, best_from, best_level = [], 0.0, None, 0
            for in_port, delay in self.arcs(name, port):
                wire = 0.0 if (kind, in_port) in DEDICATED else NET
                for bit in self.bits_in(name, in_port):
                    src = self.driver.get(bit)
                    if src is None:
                        continue
                    if src not in self.arrival:
                        pending.append(src)
                        continue
                    t = self.arrival[src] + wire + delay
                    if t > best:
                        best, best_from, best_level = t, src, self.level[src] + 1
            if pending:
                stack.extend(pending)
                continue
            self.arrival[node], self.level[node], self.came_from[node] = best, best_level, best_from
            stack.pop()

    def end_name(self, end: str, bit: int) -> str:
        """A path end by the register it loads (a flip-flop's Q), else by the net it reads."""
        if self.cells[end]["type"] in FLIP_FLOPS:
            q = self.cells[end]["connections"].get("Q", [])
            if q and isinstance(q[0], int) and q[0] in self.names:
                return self.names[q[0]]
        return self.names.get(bit, "?")

    def endpoints(self):
        """(arrival with setup, end cell, the bit it reads, that bit's driver) of every path end."""
        for name, cell in self.cells.items():
            for port, direction in cell.get("port_directions", {}).items():
                if direction != "input":
                    continue
                setup = self.endpoint_setup(name, port)
                if setup is None:
                    continue
                for bit in self.bits_in(name, port):
                    src = self.driver.get(bit)
                    if src is None:
                        continue
                    self.resolve(src)
                    yield self.arrival[src] + NET + setup, name, bit, src

    def path(self, delay: float, end: str, bit: int, src: tuple[str, str]) -> CriticalPath:
        nodes = []
        node = src
        while node is not None:
            nodes.append(node)
            node = self.came_from[node]
        nodes.reverse()
        cells = [(self.cells[n]["type"], n) for n, _ in nodes] + [(self.cells[end]["type"], end)]
        nets = [self.names.get(self.cells[n]["connections"][p][0], "?") for n, p in nodes]
        nets.append(self.end_name(end, bit))
        levels = sum(1 for kind, _ in cells[1:-1] if kind not in CLOCKS)
        return CriticalPath(round(delay * self.scale, 3), levels, cells, nets)

    def critical_path(self) -> CriticalPath:
        worst = max(self.endpoints(), default=None, key=lambda e: e[0])
        return self.path(*worst) if worst else CriticalPath(0.0, 0, [], [])

    def slow_signals(self, period_ns: float) -> list[CriticalPath]:
        """The worst path into each signal (its bits together) that takes longer than the
        period, slowest first."""
        worst: dict[str, tuple] = {}
        for end in self.endpoints():
            if end[0] * self.scale > period_ns:
                signal = re.sub(r"(\[\d+\])+$", "", self.end_name(end[1], end[2]))
                if signal not in worst or end[0] > worst[signal][0]:
                    worst[signal] = end
        return [self.path(*e) for e in sorted(worst.values(), key=lambda e: -e[0])]


def _module(netlist: dict | str | Path, top: str, family: str) -> _Netlist:
    if not isinstance(netlist, dict):
        netlist = json.loads(Path(netlist).read_text())
    return _Netlist(netlist["modules"][top], family)


def critical_path(netlist: dict | str | Path, top: str, family: str = "xc7") -> CriticalPath:
    """The estimated critical path of module `top` in a yosys JSON netlist (a dict or file)
    synthesized for `family` (`DELAY_SCALE`'s keys)."""
    return _module(netlist, top, family).critical_path()


def analyse(
    netlist: dict | str | Path, top: str, period_ns: float, family: str = "xc7"
) -> tuple[CriticalPath, list[CriticalPath]]:
    """The critical path and the slow signals (as `slow_signals`) of one netlist read once."""
    module = _module(netlist, top, family)
    return module.critical_path(), module.slow_signals(period_ns)


def slow_signals(
    netlist: dict | str | Path, top: str, period_ns: float, family: str = "xc7"
) -> list[CriticalPath]:
    """Per signal of module `top` read at a path end (a register's input), its worst path when
    that is longer than `period_ns`, slowest first."""
    return _module(netlist, top, family).slow_signals(period_ns)
