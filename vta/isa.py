"""Bit-exact VTA instructions and micro-ops (reference layout, HW_VER 0.0.2).

An instruction is 128 bits, stored as 16 little-endian bytes; a micro-op is a 32-bit word. Field
widths that depend on buffer depths are derived from the `VTAConfig`. Fields never straddle bit
64 (the reference defines them as C bitfields over two uint64 words).
"""

from __future__ import annotations

import dataclasses
import enum
from functools import cache
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from .errors import ConfigError, ISAError

if TYPE_CHECKING:
    from .config import VTAConfig

INSN_BITS = 128
INSN_BYTES = INSN_BITS // 8
UOP_BITS = 32
WORD_BITS = 64  # an instruction is two 64-bit words; no field straddles them
LOOP_ITER_WIDTH = 14  # iter_out / iter_in
MEM_SRAM_BASE_WIDTH = 16
MEM_DRAM_BASE_WIDTH = 32
MEM_SIZE_WIDTH = 16
MEM_PAD_WIDTH = 4
ALU_IMM_WIDTH = 16


class Opcode(enum.IntEnum):
    LOAD = 0
    STORE = 1
    GEMM = 2
    FINISH = 3
    ALU = 4


class MemType(enum.IntEnum):
    UOP = 0
    WGT = 1
    INP = 2
    ACC = 3
    OUT = 4
    ACC_8BIT = 5  # defined by the reference ISA, not supported by this toolkit's devices


class AluOp(enum.IntEnum):
    MIN = 0
    MAX = 1
    ADD = 2
    SHR = 3
    MUL = 4
    REQ = 5  # requantize: our extension, unused by the reference ISA


# ALU opcodes a configuration may leave out, and the config field that enables each.
ALU_OP_GATES = {AluOp.MUL: "alu_mul", AluOp.REQ: "alu_requant"}

# REQ immediate: shift amount in bits 4:0, relu (clip at 0 instead of -2^(out_width-1)) in bit 5.
REQ_SHIFT_MASK = 0x1F
REQ_RELU_BIT = 0x20


def available_alu_ops(cfg: VTAConfig) -> tuple[AluOp, ...]:
    """The ALU opcodes `cfg` implements (MUL and REQ only where their config field is set)."""
    return tuple(op for op in AluOp if op not in ALU_OP_GATES or getattr(cfg, ALU_OP_GATES[op]))


def requant_imm(shift: int, relu: bool) -> int:
    """The immediate of a REQ instruction: arithmetic shift 0..31, relu or the full clip."""
    if not 0 <= shift <= REQ_SHIFT_MASK:
        raise ISAError(f"REQ shift {shift} does not fit 5 bits (valid: 0..{REQ_SHIFT_MASK})")
    return shift | (REQ_RELU_BIT if relu else 0)


def requant_fields(imm: int) -> tuple[int, bool]:
    """(shift, relu) of a REQ immediate; other bits are ignored (the validator reports them)."""
    return imm & REQ_SHIFT_MASK, bool(imm & REQ_RELU_BIT)


def requant_bounds(out_width: int, relu: bool) -> tuple[int, int]:
    """The clip [lo, hi] of REQ: the signed `out_width`-bit range, lo = 0 with relu."""
    hi = (1 << (out_width - 1)) - 1
    return (0 if relu else -hi - 1), hi


class Module(enum.IntEnum):
    """The three modules that execute instructions (fetch feeds them in order). The order defines
    a module's 'prev' and 'next' neighbour for the dependence flags; values index arrays."""

    LOAD = 0
    COMPUTE = 1
    STORE = 2

    @property
    def label(self) -> str:
        return self.name.lower()


class TokenQueue(enum.IntEnum):
    """The dependence-token queues between neighbouring modules (load and store never talk).

    A producer pushes with its push flag toward the consumer, which pops with its pop flag; each
    queue holds up to `VTAConfig.token_queue_depth` tokens.
    """

    L2G = 0  # load -> compute
    G2L = 1  # compute -> load
    G2S = 2  # compute -> store
    S2G = 3  # store -> compute

    @property
    def producer(self) -> Module:
        return _QUEUE_ENDS[self][0]

    @property
    def consumer(self) -> Module:
        return _QUEUE_ENDS[self][1]

    @property
    def push_flag(self) -> str:
        """The producer's flag that pushes into this queue."""
        return "push_next_dep" if self.producer < self.consumer else "push_prev_dep"

    @property
    def pop_flag(self) -> str:
        """The consumer's flag that pops from this queue."""
        return "pop_prev_dep" if self.producer < self.consumer else "pop_next_dep"

    @property
    def label(self) -> str:
        """e.g. `l2g (load->compute)`."""
        return f"{self.name.lower()} ({self.producer.label}->{self.consumer.label})"

    @classmethod
    def between(cls, producer: Module, consumer: Module) -> TokenQueue:
        """The queue from `producer` to `consumer`; only neighbouring modules have one."""
        queue = _QUEUE_BETWEEN.get((producer, consumer))
        if queue is not None:
            return queue
        raise ISAError(
            f"no token queue from {Module(producer).label} to {Module(consumer).label} "
            "(queues: load<->compute, compute<->store)"
        )


_QUEUE_ENDS = {
    TokenQueue.L2G: (Module.LOAD, Module.COMPUTE),
    TokenQueue.G2L: (Module.COMPUTE, Module.LOAD),
    TokenQueue.G2S: (Module.COMPUTE, Module.STORE),
    TokenQueue.S2G: (Module.STORE, Module.COMPUTE),
}
_QUEUE_BETWEEN = {ends: queue for queue, ends in _QUEUE_ENDS.items()}

DEP_FIELDS = ("pop_prev_dep", "pop_next_dep", "push_prev_dep", "push_next_dep")


def _module_flags(module: Module) -> dict[str, TokenQueue]:
    flags = {q.pop_flag: q for q in TokenQueue if q.consumer == module}
    return flags | {q.push_flag: q for q in TokenQueue if q.producer == module}


# The dependence flags each module has, and the queue each one pops or pushes.
MODULE_FLAGS: dict[Module, dict[str, TokenQueue]] = {m: _module_flags(m) for m in Module}

# Fetch routing (the RTL's fetch reads it through the generated header): the memory types a
# LOAD fills, each with the module that executes it, and the types a STORE reads. Every other
# LOAD (a NOP of another type), GEMM, ALU and FINISH runs on compute; every STORE on store.
LOAD_ROUTES: dict[MemType, Module] = {
    MemType.UOP: Module.COMPUTE,
    MemType.WGT: Module.LOAD,
    MemType.INP: Module.LOAD,
    MemType.ACC: Module.COMPUTE,
}
STORE_TYPES: tuple[MemType, ...] = (MemType.OUT,)

# SRAM buffers written by one module and read by another, which dependence tokens must order:
# memory type -> (writer, reader).
SHARED_BUFFERS: dict[MemType, tuple[Module, Module]] = {
    MemType.INP: (Module.LOAD, Module.COMPUTE),
    MemType.WGT: (Module.LOAD, Module.COMPUTE),
    MemType.OUT: (Module.COMPUTE, Module.STORE),
}


def route(opcode: int, memory_type: int = -1) -> Module:
    """The module that executes an instruction (fetch routes on opcode and memory type only)."""
    if 0 <= opcode < len(_ROUTES) and -1 <= memory_type < len(MemType):
        return _ROUTES[opcode][memory_type]  # memory_type -1 reads the last entry
    return _route(opcode, memory_type)


def _route(opcode: int, memory_type: int) -> Module:
    if opcode == Opcode.STORE:
        return Module.STORE
    if opcode == Opcode.LOAD and LOAD_ROUTES.get(memory_type) == Module.LOAD:
        return Module.LOAD
    return Module.COMPUTE


# `route` by opcode, then memory type (-1 last): list indexing, cheaper than the comparisons
# with enum members (each member read is an attribute lookup through the enum class)
_ROUTES = [[_route(op, m) for m in (*MemType, -1)] for op in Opcode]


def route_array(opcode: np.ndarray, memory_type: np.ndarray) -> np.ndarray:
    """`route` over whole columns of opcodes and memory types (int64 module numbers)."""
    module = np.full(opcode.shape, int(Module.COMPUTE), dtype=np.int64)
    to_load = [int(m) for m, dst in LOAD_ROUTES.items() if dst == Module.LOAD]
    module[(opcode == Opcode.LOAD) & np.isin(memory_type, to_load)] = Module.LOAD
    module[opcode == Opcode.STORE] = Module.STORE
    return module


@dataclasses.dataclass(frozen=True)
class _Insn:
    pop_prev_dep: bool = False
    pop_next_dep: bool = False
    push_prev_dep: bool = False
    push_next_dep: bool = False

    opcode: ClassVar[Opcode]

    def replace(self, **changes) -> Insn:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """Reference field names; enums as names, flags as 0/1."""
        out: dict = {"opcode": self.opcode.name}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, enum.Enum):
                value = value.name
            elif isinstance(value, bool):
                value = int(value)
            out[f.name] = value
        return out


@dataclasses.dataclass(frozen=True)
class MemInsn(_Insn):
    """LOAD or STORE: a 2-D strided copy between DRAM and an SRAM buffer, with zero padding."""

    is_store: bool = False
    memory_type: MemType = MemType.INP
    sram_base: int = 0
    dram_base: int = 0
    y_size: int = 0
    x_size: int = 0
    x_stride: int = 0
    y_pad_0: int = 0
    y_pad_1: int = 0
    x_pad_0: int = 0
    x_pad_1: int = 0

    @property
    def opcode(self) -> Opcode:  # type: ignore[override]
        return Opcode.STORE if self.is_store else Opcode.LOAD

    @property
    def is_nop(self) -> bool:
        """x_size == 0: only the dependence flags act."""
        return self.x_size == 0

    def to_dict(self) -> dict:
        out = super().to_dict()
        del out["is_store"]
        return out


@dataclasses.dataclass(frozen=True)
class _KernelInsn(_Insn):
    """Fields shared by GEMM and ALU: a micro-op range run under two affine loops."""

    reset_reg: bool = False
    uop_bgn: int = 0
    uop_end: int = 0
    iter_out: int = 1
    iter_in: int = 1
    dst_factor_out: int = 0
    dst_factor_in: int = 0
    src_factor_out: int = 0
    src_factor_in: int = 0

    @property
    def uop_count(self) -> int:
        """Micro-ops executed: iter_out * iter_in * (uop_end - uop_bgn)."""
        return self.iter_out * self.iter_in * max(self.uop_end - self.uop_bgn, 0)


@dataclasses.dataclass(frozen=True)
class GemmInsn(_KernelInsn):
    """GEMM over a micro-op kernel with two affine loops (iter_out x iter_in)."""

    wgt_factor_out: int = 0
    wgt_factor_in: int = 0

    opcode: ClassVar[Opcode] = Opcode.GEMM


@dataclasses.dataclass(frozen=True)
class AluInsn(_KernelInsn):
    """Vector ALU over a micro-op kernel: ACC[dst] = op(ACC[dst], imm or ACC[src]); REQ computes
    clip((ACC[dst] + (0 or ACC[src])) >> shift) with shift and relu from `imm` in both modes."""

    alu_opcode: AluOp = AluOp.MIN
    use_imm: bool = False
    imm: int = 0

    opcode: ClassVar[Opcode] = Opcode.ALU


@dataclasses.dataclass(frozen=True)
class FinishInsn(_Insn):
    """Raise 'done' once the compute module reaches it."""

    opcode: ClassVar[Opcode] = Opcode.FINISH


Insn = MemInsn | GemmInsn | AluInsn | FinishInsn


def insn_module(insn: Insn) -> Module:
    """The module that executes `insn`."""
    return route(insn.opcode, getattr(insn, "memory_type", -1))


# --------------------------------------------------------------------------------- layouts
@dataclasses.dataclass(frozen=True)
class Field:
    name: str
    lsb: int
    width: int
    signed: bool = False


# The config field that sets each buffer's depth, hence the width of the indices into it.
DEPTH_FIELDS = {
    MemType.UOP: "log_uop_buff_size",
    MemType.WGT: "log_wgt_buff_size",
    MemType.INP: "log_inp_buff_size",
    MemType.ACC: "log_acc_buff_size",
}


def _word(
    cfg: VTAConfig, family: str, word: int, fields: list[tuple[str, int, bool]], sources=()
) -> list[Field]:
    """Fields packed from the low bit of 64-bit word `word`; a word that overflows is a
    ConfigError naming the config fields (`sources`, memory types) that set its widths."""
    out, pos = [], 0
    for name, width, signed in fields:
        out.append(Field(name, word * WORD_BITS + pos, width, signed))
        pos += width
    if pos > WORD_BITS:
        names = ", ".join(DEPTH_FIELDS[m] for m in sources) or "none"
        raise ConfigError(
            f"config {cfg.name!r}: {family.upper()} word {word} needs {pos} bits, more than "
            f"{WORD_BITS} (buffer depths set its index widths: {names})"
        )
    return out


_HEADER = [("opcode", 3, False)] + [(name, 1, False) for name in DEP_FIELDS]


@cache
def layouts(cfg: VTAConfig) -> dict[str, tuple[Field, ...]]:
    """Bit layout of each instruction family (mem, gemm, alu, finish) for a configuration;
    raises ConfigError when the configuration's buffer depths overflow a word."""
    ld = cfg.log_depth
    acc, inp, wgt, uop = MemType.ACC, MemType.INP, MemType.WGT, MemType.UOP
    mem = _word(
        cfg,
        "mem",
        0,
        _HEADER
        + [
            ("memory_type", 3, False),
            ("sram_base", MEM_SRAM_BASE_WIDTH, False),
            ("dram_base", MEM_DRAM_BASE_WIDTH, False),
        ],
    ) + _word(
        cfg,
        "mem",
        1,
        [
            ("y_size", MEM_SIZE_WIDTH, False),
            ("x_size", MEM_SIZE_WIDTH, False),
            ("x_stride", MEM_SIZE_WIDTH, False),
            ("y_pad_0", MEM_PAD_WIDTH, False),
            ("y_pad_1", MEM_PAD_WIDTH, False),
            ("x_pad_0", MEM_PAD_WIDTH, False),
            ("x_pad_1", MEM_PAD_WIDTH, False),
        ],
    )
    word0 = _HEADER + [
        ("reset_reg", 1, False),
        ("uop_bgn", ld[uop], False),
        ("uop_end", ld[uop] + 1, False),
        ("iter_out", LOOP_ITER_WIDTH, False),
        ("iter_in", LOOP_ITER_WIDTH, False),
    ]
    gemm = _word(cfg, "gemm", 0, word0, [uop]) + _word(
        cfg,
        "gemm",
        1,
        [
            ("dst_factor_out", ld[acc], False),
            ("dst_factor_in", ld[acc], False),
            ("src_factor_out", ld[inp], False),
            ("src_factor_in", ld[inp], False),
            ("wgt_factor_out", ld[wgt], False),
            ("wgt_factor_in", ld[wgt], False),
        ],
        [acc, inp, wgt],
    )
    alu = _word(cfg, "alu", 0, word0, [uop]) + _word(
        cfg,
        "alu",
        1,
        [
            ("dst_factor_out", ld[acc], False),
            ("dst_factor_in", ld[acc], False),
            ("src_factor_out", ld[acc], False),
            ("src_factor_in", ld[acc], False),
            ("alu_opcode", 3, False),
            ("use_imm", 1, False),
            ("imm", ALU_IMM_WIDTH, True),
        ],
        [acc],
    )
    finish = _word(cfg, "finish", 0, _HEADER)
    return {"mem": tuple(mem), "gemm": tuple(gemm), "alu": tuple(alu), "finish": tuple(finish)}


def _family(insn: Insn) -> str:
    if isinstance(insn, MemInsn):
        return "mem"
    if isinstance(insn, GemmInsn):
        return "gemm"
    if isinstance(insn, AluInsn):
        return "alu"
    if isinstance(insn, FinishInsn):
        return "finish"
    raise ISAError(f"not an instruction: {insn!r}")


def field_range(field: Field) -> tuple[int, int]:
    """Inclusive [lo, hi] of the values a field can hold."""
    if field.signed:
        return -(1 << (field.width - 1)), (1 << (field.width - 1)) - 1
    return 0, (1 << field.width) - 1


def encode(insn: Insn, cfg: VTAConfig, index: int | None = None) -> bytes:
    """Encode one instruction to its 16 bytes; a field out of range raises `ISAError`."""
    word = 0
    where = f"instruction {index}: " if index is not None else ""
    for field in layouts(cfg)[_family(insn)]:
        value = int(insn.opcode) if field.name == "opcode" else int(getattr(insn, field.name))
        lo, hi = field_range(field)
        if not lo <= value <= hi:
            raise ISAError(
                f"{where}{insn.opcode.name} field {field.name!r} = {value} does not fit "
                f"{field.width} bits (valid: {lo}..{hi})"
            )
        word |= (value & ((1 << field.width) - 1)) << field.lsb
    return word.to_bytes(INSN_BYTES, "little")


def _field_value(word: int, field: Field) -> int:
    value = (word >> field.lsb) & ((1 << field.width) - 1)
    if field.signed and value >> (field.width - 1):
        value -= 1 << field.width
    return value


def decode(data: bytes, cfg: VTAConfig, index: int | None = None) -> Insn:
    """Decode 16 bytes into an instruction; an unknown opcode or memory type raises."""
    if len(data) != INSN_BYTES:
        raise ISAError(f"an instruction is {INSN_BYTES} bytes, got {len(data)}")
    word = int.from_bytes(bytes(data), "little")
    where = f"instruction {index}: " if index is not None else ""
    code = word & 0x7
    try:
        opcode = Opcode(code)
    except ValueError:
        raise ISAError(f"{where}unknown opcode {code} (valid: 0..4)") from None
    family = {Opcode.LOAD: "mem", Opcode.STORE: "mem", Opcode.GEMM: "gemm", Opcode.ALU: "alu"}
    fam = family.get(opcode, "finish")
    values = {f.name: _field_value(word, f) for f in layouts(cfg)[fam] if f.name != "opcode"}
    for name in DEP_FIELDS:
        values[name] = bool(values[name])
    if fam == "mem":
        try:
            values["memory_type"] = MemType(values["memory_type"])
        except ValueError:
            raise ISAError(
                f"{where}unknown memory_type {values['memory_type']} (valid: 0..5)"
            ) from None
        return MemInsn(is_store=opcode == Opcode.STORE, **values)
    if fam in ("gemm", "alu"):
        values["reset_reg"] = bool(values["reset_reg"])
    if fam == "gemm":
        return GemmInsn(**values)
    if fam == "alu":
        try:
            values["alu_opcode"] = AluOp(values["alu_opcode"])
        except ValueError:
            raise ISAError(
                f"{where}unknown alu_opcode {values['alu_opcode']} (valid: 0..{int(max(AluOp))})"
            ) from None
        values["use_imm"] = bool(values["use_imm"])
        return AluInsn(**values)
    return FinishInsn(**values)


def encode_stream(insns: list[Insn], cfg: VTAConfig) -> np.ndarray:
    """Encode instructions to a uint8 array of 16 bytes each, one numpy column per field and
    instruction family; a field out of range raises `ISAError` as `encode` does."""
    words = np.zeros((len(insns), 2), dtype="<u8")
    families: dict[str, list[int]] = {}
    for i, insn in enumerate(insns):
        families.setdefault(_family(insn), []).append(i)
    for family, index in families.items():
        rows = [insns[i] for i in index]
        for field in layouts(cfg)[family]:
            name = field.name
            values = [int(r.opcode if name == "opcode" else getattr(r, name)) for r in rows]
            lo, hi = field_range(field)
            if min(values) < lo or max(values) > hi:
                k = next(k for k, v in enumerate(values) if not lo <= v <= hi)
                encode(rows[k], cfg, index[k])  # raises, naming the instruction and field
            column = np.array(values, dtype=np.int64) & ((1 << field.width) - 1)
            words[index, field.lsb // WORD_BITS] |= column.astype(np.uint64) << np.uint64(
                field.lsb % WORD_BITS
            )
    return words.view(np.uint8).reshape(-1).copy()


def decode_stream(data: np.ndarray | bytes, cfg: VTAConfig) -> list[Insn]:
    """Decode a byte stream of whole instructions."""
    raw = bytes(np.asarray(data, dtype=np.uint8).tobytes()) if not isinstance(data, bytes) else data
    if len(raw) % INSN_BYTES:
        raise ISAError(
            f"instruction stream of {len(raw)} bytes is not a multiple of {INSN_BYTES} "
            "(truncated file?)"
        )
    return [
        decode(raw[i : i + INSN_BYTES], cfg, i // INSN_BYTES)
        for i in range(0, len(raw), INSN_BYTES)
    ]


# --------------------------------------------------------------------------------- micro-ops
@cache
def uop_layout(cfg: VTAConfig) -> tuple[Field, Field, Field]:
    """dst_idx (an ACC row), src_idx (an INP or ACC row), wgt_idx (a WGT row) in 32 bits;
    raises ConfigError when the buffer depths need more."""
    ld = cfg.log_depth
    widths = {
        "dst_idx": ld[MemType.ACC],
        "src_idx": max(ld[MemType.ACC], ld[MemType.INP]),
        "wgt_idx": ld[MemType.WGT],
    }
    bits = sum(widths.values())
    if bits > UOP_BITS:
        raise ConfigError(
            f"config {cfg.name!r}: a micro-op needs {bits} bits, more than {UOP_BITS} (buffer "
            f"depths set its index widths: {DEPTH_FIELDS[MemType.ACC]}, "
            f"{DEPTH_FIELDS[MemType.INP]}, {DEPTH_FIELDS[MemType.WGT]})"
        )
    lsb = np.cumsum([0, *widths.values()])
    return tuple(Field(name, int(lsb[k]), w) for k, (name, w) in enumerate(widths.items()))


def check_encodable(cfg: VTAConfig) -> None:
    """Raise ConfigError if `cfg`'s instructions or micro-ops do not fit their bits."""
    layouts(cfg)
    uop_layout(cfg)


def encode_uops(uops: np.ndarray | list, cfg: VTAConfig) -> np.ndarray:
    """Encode an (n, 3) array of (dst_idx, src_idx, wgt_idx) to uint32 words."""
    arr = np.asarray(uops, dtype=np.int64).reshape(-1, 3)
    word = np.zeros(len(arr), dtype=np.uint64)
    for col, field in enumerate(uop_layout(cfg)):
        values = arr[:, col]
        bad = np.flatnonzero((values < 0) | (values >= (1 << field.width)))
        if bad.size:
            k = int(bad[0])
            raise ISAError(
                f"micro-op {k}: field {field.name!r} = {int(values[k])} does not fit "
                f"{field.width} bits (valid: 0..{(1 << field.width) - 1})"
            )
        word |= values.astype(np.uint64) << np.uint64(field.lsb)
    return word.astype(np.uint32)


def decode_uops(words: np.ndarray, cfg: VTAConfig) -> np.ndarray:
    """Decode uint32 micro-op words to an (n, 3) int64 array (dst_idx, src_idx, wgt_idx)."""
    w = np.asarray(words, dtype=np.uint32).astype(np.int64)
    cols = [(w >> f.lsb) & ((1 << f.width) - 1) for f in uop_layout(cfg)]
    return np.stack(cols, axis=1) if len(w) else np.zeros((0, 3), dtype=np.int64)
