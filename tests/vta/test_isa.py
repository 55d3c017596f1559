"""Bit-exact encode/decode of every instruction family and of micro-ops (hypothesis)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vta.config import load_config
from vta.errors import ISAError
from vta.isa import (
    INSN_BYTES,
    MODULE_FLAGS,
    AluInsn,
    AluOp,
    FinishInsn,
    GemmInsn,
    MemInsn,
    MemType,
    Module,
    Opcode,
    TokenQueue,
    decode,
    decode_stream,
    decode_uops,
    encode,
    encode_stream,
    encode_uops,
    field_range,
    insn_module,
    layouts,
    requant_bounds,
    requant_fields,
    requant_imm,
    route,
    route_array,
    uop_layout,
)

CONFIGS = [load_config(name) for name in ("pynq", "tiny", "ultra96")]
FAMILY_CLASS = {"gemm": GemmInsn, "alu": AluInsn, "finish": FinishInsn}


def _limit_biased(lo: int, hi: int) -> st.SearchStrategy[int]:
    """Values at and next to the limits of a field, and anything in between."""
    return st.one_of(
        st.sampled_from(sorted({lo, hi, min(lo + 1, hi), max(hi - 1, lo)})), st.integers(lo, hi)
    )


@st.composite
def instructions(draw, cfg, family):
    values = {}
    for field in layouts(cfg)[family]:
        if field.name == "opcode":
            continue
        if field.name == "memory_type":
            values[field.name] = draw(st.sampled_from(list(MemType)))
        elif field.name == "alu_opcode":
            values[field.name] = draw(st.sampled_from(list(AluOp)))
        elif field.width == 1:
            values[field.name] = draw(st.booleans())
        else:
            values[field.name] = draw(_limit_biased(*field_range(field)))
    if family == "mem":
        return MemInsn(is_store=draw(st.booleans()), **values)
    return FAMILY_CLASS[family](**values)


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.name)
@pytest.mark.parametrize("family", ["mem", "gemm", "alu", "finish"])
def test_round_trip_every_field_at_its_limits(cfg, family):
    @settings(max_examples=150, deadline=None)
    @given(instructions(cfg, family))
    def check(insn):
        data = encode(insn, cfg)
        assert len(data) == INSN_BYTES
        assert decode(data, cfg) == insn

    check()


def test_stream_round_trip():
    cfg = CONFIGS[0]
    insns = [
        MemInsn(memory_type=MemType.INP, x_size=3, y_size=2, x_stride=3, push_next_dep=True),
        GemmInsn(uop_bgn=1, uop_end=4, iter_out=2, iter_in=3, pop_prev_dep=True),
        AluInsn(alu_opcode=AluOp.SHR, use_imm=True, imm=-5, uop_end=1),
        MemInsn(is_store=True, memory_type=MemType.OUT, x_size=1, y_size=1),
        FinishInsn(),
    ]
    raw = encode_stream(insns, cfg)
    assert raw.dtype == np.uint8 and raw.size == 16 * len(insns)
    assert decode_stream(raw, cfg) == insns


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.name)
def test_stream_encoding_is_each_instructions_encoding(cfg):
    """encode_stream (a column per field) gives exactly the bytes of encode, one by one."""
    families = st.sampled_from(["mem", "gemm", "alu", "finish"])

    @settings(max_examples=40, deadline=None)
    @given(st.lists(families.flatmap(lambda f: instructions(cfg, f)), max_size=12))
    def check(insns):
        one_by_one = b"".join(encode(x, cfg, i) for i, x in enumerate(insns))
        assert encode_stream(insns, cfg).tobytes() == one_by_one

    check()


def test_stream_encoding_names_the_instruction_out_of_range():
    cfg = CONFIGS[0]
    insns = [GemmInsn(uop_end=1), GemmInsn(uop_end=1, iter_in=1 << 14)]
    with pytest.raises(ISAError, match="instruction 1: GEMM field 'iter_in' = 16384"):
        encode_stream(insns, cfg)


# The reference VTA layout (HW_VER 0.0.2) for the default configuration: lsb of each field.
PYNQ_LSB = {
    "mem": {
        "opcode": 0,
        "pop_prev_dep": 3,
        "pop_next_dep": 4,
        "push_prev_dep": 5,
        "push_next_dep": 6,
        "memory_type": 7,
        "sram_base": 10,
        "dram_base": 26,
        "y_size": 64,
        "x_size": 80,
        "x_stride": 96,
        "y_pad_0": 112,
        "y_pad_1": 116,
        "x_pad_0": 120,
        "x_pad_1": 124,
    },
    "gemm": {
        "reset_reg": 7,
        "uop_bgn": 8,
        "uop_end": 21,
        "iter_out": 35,
        "iter_in": 49,
        "dst_factor_out": 64,
        "dst_factor_in": 75,
        "src_factor_out": 86,
        "src_factor_in": 97,
        "wgt_factor_out": 108,
        "wgt_factor_in": 118,
    },
    "alu": {
        "dst_factor_out": 64,
        "dst_factor_in": 75,
        "src_factor_out": 86,
        "src_factor_in": 97,
        "alu_opcode": 108,
        "use_imm": 111,
        "imm": 112,
    },
}


@pytest.mark.parametrize("family", sorted(PYNQ_LSB))
def test_pynq_layout_is_the_reference_layout(family):
    lsb = {f.name: f.lsb for f in layouts(CONFIGS[0])[family]}
    for name, want in PYNQ_LSB[family].items():
        assert lsb[name] == want, name


def test_known_encoding_bits():
    cfg = CONFIGS[0]
    word = int.from_bytes(
        encode(AluInsn(use_imm=True, imm=-1, alu_opcode=AluOp.SHR), cfg), "little"
    )
    assert word & 0x7 == 4  # ALU opcode
    assert word >> 112 == 0xFFFF  # imm -1, sign bits
    assert (word >> 108) & 0x7 == AluOp.SHR and (word >> 111) & 1 == 1
    load = int.from_bytes(encode(MemInsn(memory_type=MemType.ACC, dram_base=1), cfg), "little")
    assert load == (3 << 7) | (1 << 26)


@pytest.mark.parametrize("family", ["mem", "gemm", "alu"])
def test_out_of_range_field_raises_naming_the_field(family):
    cfg = CONFIGS[0]
    cls = {"mem": MemInsn, "gemm": GemmInsn, "alu": AluInsn}[family]
    for field in layouts(cfg)[family]:
        if field.name in ("opcode", "memory_type", "alu_opcode") or field.width == 1:
            continue
        lo, hi = field_range(field)
        for bad in (hi + 1, lo - 1):
            with pytest.raises(ISAError, match=f"instruction 7: .*'{field.name}' = {bad}"):
                encode(cls(**{field.name: bad}), cfg, index=7)


def test_req_encoding_at_its_limits():
    """REQ (opcode 5) with the largest shift and relu, in both operand modes, round trips; its
    immediate packs the shift in bits 4:0 and relu in bit 5."""
    cfg = CONFIGS[0]
    for use_imm in (False, True):
        insn = AluInsn(alu_opcode=AluOp.REQ, use_imm=use_imm, imm=requant_imm(31, True))
        word = int.from_bytes(encode(insn, cfg), "little")
        assert (word >> 108) & 0x7 == 5 and word >> 112 == 0x3F
        assert decode(encode(insn, cfg), cfg) == insn
    assert requant_imm(0, False) == 0 and requant_fields(0x28) == (8, True)
    assert requant_bounds(8, relu=False) == (-128, 127) and requant_bounds(8, relu=True) == (0, 127)
    for bad in (-1, 32):
        with pytest.raises(ISAError, match=f"REQ shift {bad} does not fit 5 bits"):
            requant_imm(bad, False)


def test_decode_rejects_unknown_codes():
    cfg = CONFIGS[0]
    with pytest.raises(ISAError, match="unknown opcode 6"):
        decode((6).to_bytes(16, "little"), cfg, 3)
    with pytest.raises(ISAError, match="unknown memory_type 7"):
        decode((7 << 7).to_bytes(16, "little"), cfg)
    with pytest.raises(ISAError, match="unknown alu_opcode 6"):
        decode((4 | (6 << 108)).to_bytes(16, "little"), cfg)
    with pytest.raises(ISAError, match="multiple of 16"):
        decode_stream(np.zeros(17, np.uint8), cfg)


def test_module_routing():
    """The reference fetch: LOAD INP/WGT to load, STORE to store, the rest (other LOADs,
    GEMM, ALU, FINISH, NOPs of any type) to compute."""
    assert insn_module(MemInsn(memory_type=MemType.INP)) == Module.LOAD
    assert insn_module(MemInsn(memory_type=MemType.WGT)) == Module.LOAD
    assert insn_module(MemInsn(memory_type=MemType.UOP)) == Module.COMPUTE
    assert insn_module(MemInsn(memory_type=MemType.ACC)) == Module.COMPUTE
    assert insn_module(MemInsn(memory_type=MemType.OUT)) == Module.COMPUTE  # a NOP at most
    assert insn_module(MemInsn(is_store=True, memory_type=MemType.OUT)) == Module.STORE
    assert insn_module(MemInsn(is_store=True, memory_type=MemType.UOP)) == Module.STORE
    assert insn_module(GemmInsn()) == insn_module(AluInsn()) == Module.COMPUTE
    assert insn_module(FinishInsn()) == Module.COMPUTE
    ops = np.array([int(Opcode.LOAD)] * 6 + [int(Opcode.STORE), int(Opcode.GEMM)])
    mems = np.array([*range(6), 4, 0])
    want = [route(o, m) for o, m in zip(ops.tolist(), mems.tolist(), strict=True)]
    assert route_array(ops, mems).tolist() == want


def test_token_topology():
    """Four queues between neighbours, each flag naming the queue of the reference ISA."""
    ends = {q.name: (q.producer, q.consumer) for q in TokenQueue}
    load, compute, store = Module.LOAD, Module.COMPUTE, Module.STORE
    assert ends == {
        "L2G": (load, compute),
        "G2L": (compute, load),
        "G2S": (compute, store),
        "S2G": (store, compute),
    }
    assert MODULE_FLAGS == {
        load: {"pop_next_dep": TokenQueue.G2L, "push_next_dep": TokenQueue.L2G},
        compute: {
            "pop_prev_dep": TokenQueue.L2G,
            "pop_next_dep": TokenQueue.S2G,
            "push_prev_dep": TokenQueue.G2L,
            "push_next_dep": TokenQueue.G2S,
        },
        store: {"pop_prev_dep": TokenQueue.G2S, "push_prev_dep": TokenQueue.S2G},
    }
    assert TokenQueue.between(store, compute) == TokenQueue.S2G
    with pytest.raises(ISAError, match="no token queue from load to store"):
        TokenQueue.between(load, store)


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.name)
def test_uop_round_trip_at_limits(cfg):
    widths = [f.width for f in uop_layout(cfg)]

    @settings(max_examples=100, deadline=None)
    @given(
        st.lists(
            st.tuples(*[_limit_biased(0, (1 << w) - 1) for w in widths]), min_size=1, max_size=40
        )
    )
    def check(uops):
        words = encode_uops(uops, cfg)
        assert words.dtype == np.uint32
        np.testing.assert_array_equal(decode_uops(words, cfg), np.array(uops))

    check()


def test_uop_bit_layout_and_range_errors():
    cfg = CONFIGS[0]
    assert int(encode_uops([(1, 2, 3)], cfg)[0]) == 1 | (2 << 11) | (3 << 22)
    with pytest.raises(ISAError, match="micro-op 1: field 'wgt_idx' = 1024"):
        encode_uops([(0, 0, 0), (0, 0, 1024)], cfg)
    with pytest.raises(ISAError, match="'dst_idx' = -1"):
        encode_uops([(-1, 0, 0)], cfg)
