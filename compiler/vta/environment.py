"""The accelerator as the compiler sees it: memory scopes, element sizes, capacities, pragmas,
the GEMM and ALU tensor intrinsics and the shifts used in tensor expressions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import cache, cached_property
from typing import Any

from vta.config import VTAConfig, field_type
from vta.isa import ALU_IMM_WIDTH, AluOp, MemType

from .. import te
from ..errors import LoweringError
from ..schedule.tensorize import TensorIntrin, decl_buffer, decl_tensor_intrin
from ..tir import expr as E
from ..tir import stmt as S

INP_SCOPE, WGT_SCOPE, ACC_SCOPE = "local.inp_buffer", "local.wgt_buffer", "local.acc_buffer"
DMA_COPY, ALU = "dma_copy", "alu"
GEMM_CALL, GEMM_RESET_CALL = "vta.gemm", "vta.gemm_reset"
SHR_CALL, SHL_CALL = "vta.shift_right", "vta.shift_left"
ALU_CALL = "vta.alu"
IMM_RANGE = (-(1 << (ALU_IMM_WIDTH - 1)), (1 << (ALU_IMM_WIDTH - 1)) - 1)

# memory kind (VTAConfig key) and the memory type DMA writes, per scope
SCOPE_MEM = {INP_SCOPE: MemType.INP, WGT_SCOPE: MemType.WGT, ACC_SCOPE: MemType.ACC}


def shift_right(x: Any, n: Any) -> E.Expr:
    """Arithmetic shift right (ALU SHR) by an immediate or elementwise by an accumulator tensor
    (signed amounts: a negative one shifts left)."""
    x = E.convert(x)
    return E.Call(x.dtype, SHR_CALL, [x, E.convert(n)])


def shift_left(x: Any, n: int) -> E.Expr:
    """Shift left by an immediate (ALU SHR by a negative amount)."""
    x = E.convert(x)
    return E.Call(x.dtype, SHL_CALL, [x, E.const(int(n))])


# ALU intrinsics: name -> (ALU opcode, the operation on (x, operand)); copy is SHR by 0
ALU_INTRINS: dict[str, tuple[AluOp, Callable[[Any, Any], Any]]] = {
    "add": (AluOp.ADD, lambda x, y: x + y),
    "min": (AluOp.MIN, te.min),
    "max": (AluOp.MAX, te.max),
    "mul": (AluOp.MUL, lambda x, y: x * y),
    "shr": (AluOp.SHR, shift_right),
    "shl": (AluOp.SHR, shift_left),
    "copy": (AluOp.SHR, lambda x, y: x),
}


@dataclass(frozen=True)
class Environment:
    """Everything the VTA target derives from one `VTAConfig`."""

    config: VTAConfig

    inp_scope = INP_SCOPE
    wgt_scope = WGT_SCOPE
    acc_scope = ACC_SCOPE
    dma_copy = DMA_COPY
    alu = ALU
    inp_dtype = wgt_dtype = out_dtype = "int8"
    acc_dtype = "int32"

    @property
    def batch(self) -> int:
        return self.config.batch

    @property
    def block_in(self) -> int:
        return self.config.block_in

    @property
    def block_out(self) -> int:
        return self.config.block_out

    def lanes(self, scope: str) -> int:
        """Scalars in one element (one SRAM row) of `scope`."""
        return {
            INP_SCOPE: self.batch * self.block_in,
            WGT_SCOPE: self.block_out * self.block_in,
            ACC_SCOPE: self.batch * self.block_out,
        }[scope]

    def capacity(self, scope: str) -> int:
        """Bytes of the on-chip buffer behind `scope`."""
        return self.config.buff_bytes[SCOPE_MEM[scope]]

    def elem_bytes(self, scope: str) -> int:
        return self.config.elem_bytes[SCOPE_MEM[scope]]

    @cached_property
    def gemm(self) -> TensorIntrin:
        """out[BATCH, BLOCK_OUT] (int32) += inp[BATCH, BLOCK_IN] . wgt[BLOCK_OUT, BLOCK_IN]^T."""
        inp = te.placeholder((self.batch, self.block_in), self.inp_dtype, "inp")
        wgt = te.placeholder((self.block_out, self.block_in), self.wgt_dtype, "wgt")
        k = te.reduce_axis(self.block_in, "k")
        out = te.compute(
            (self.batch, self.block_out),
            lambda i, j: te.sum(
                inp[i, k].astype(self.acc_dtype) * wgt[j, k].astype(self.acc_dtype), axis=k
            ),
            "out",
        )
        binds = {
            t: decl_buffer(t.shape, t.dtype, t.name, scope=scope)
            for t, scope in ((inp, INP_SCOPE), (wgt, WGT_SCOPE), (out, ACC_SCOPE))
        }

        def fcompute(ins: list[S.Buffer], outs: list[S.Buffer]):
            dinp, dwgt = ins
            ptrs = [outs[0].access_ptr("rw"), dinp.access_ptr("r"), dwgt.access_ptr("r")]
            reset = S.Evaluate(E.Call("int32", GEMM_RESET_CALL, ptrs[:1]))
            update = S.Evaluate(E.Call("int32", GEMM_CALL, ptrs))
            return S.seq(reset, update), reset, update

        return decl_tensor_intrin(out.op, fcompute, "vta.gemm", binds)

    def alu_intrin(self, name: str, imm: int | None = None) -> TensorIntrin:
        """ALU tensor intrinsic over one accumulator element (BATCH x BLOCK_OUT int32):
        out = name(x, y) with y an accumulator tensor, or the immediate `imm` (shl: immediate
        only; copy: no operand). Tensorize an elementwise local.acc_buffer stage with it."""
        return _alu_intrin(self, name, imm)


@cache
def _alu_intrin(env: Environment, name: str, imm: int | None) -> TensorIntrin:
    if name not in ALU_INTRINS:
        raise LoweringError(f"ALU intrinsic '{name}' is unknown (valid: {', '.join(ALU_INTRINS)})")
    opcode, fop = ALU_INTRINS[name]
    if opcode == AluOp.MUL and not env.config.alu_mul:
        raise LoweringError(
            f"ALU intrinsic 'mul': configuration {env.config.name!r} has no ALU multiply"
        )
    if name == "shl" and imm is None:
        raise LoweringError(
            "ALU intrinsic 'shl' takes an immediate (shift_right a tensor of "
            "negative amounts to shift left elementwise)"
        )
    if name == "copy":
        imm = 0
    shape, dtype = (env.batch, env.block_out), env.acc_dtype
    x = te.placeholder(shape, dtype, "x")
    ins = [x] if imm is not None else [x, te.placeholder(shape, dtype, "y")]
    if imm is not None:
        out = te.compute(shape, lambda i, j: fop(x[i, j], imm), "out")
    else:
        out = te.compute(shape, lambda i, j: fop(x[i, j], ins[1][i, j]), "out")
    binds = {t: decl_buffer(shape, dtype, t.name, scope=ACC_SCOPE) for t in [*ins, out]}

    def fcompute(bufs: list[S.Buffer], outs: list[S.Buffer]) -> S.Stmt:
        operand = (
            bufs[1].access_ptr("r") if imm is None else E.const(-imm if name == "shl" else imm)
        )
        ptrs = [outs[0].access_ptr("w"), bufs[0].access_ptr("r")]
        return S.Evaluate(E.Call("int32", ALU_CALL, [E.StringImm(opcode.name), *ptrs, operand]))

    return decl_tensor_intrin(out.op, fcompute, f"vta.alu_{name}", binds)


@cache
def _env(config: VTAConfig) -> Environment:
    return Environment(config)


def get_env(config: VTAConfig | str | None = None) -> Environment:
    """The environment of a configuration (the default PYNQ preset when None)."""
    return _env(VTAConfig.load(config))


# Fields that change no Program or cycle count: a target names a configuration without them.
_NOT_ARCHITECTURE = ("name", "description", "target", "hw_ver", "fpga_part", "clock_mhz")


def vta_target(config: VTAConfig | str | None = None) -> str:
    """The tuning target of a configuration: ``vta`` for the default preset's architecture, else
    ``vta -config=FIELD:VALUE,...`` with every field that differs from it (records of one
    configuration are never applied to another)."""
    cfg, default = VTAConfig.load(config), VTAConfig.load(None)
    changed = [
        f"{f.name}:{int(v) if isinstance(v, bool) else v}"
        for f in fields(VTAConfig)
        if f.name not in _NOT_ARCHITECTURE
        and (v := getattr(cfg, f.name)) != getattr(default, f.name)
    ]
    return "vta -config=" + ",".join(changed) if changed else "vta"


def target_config(target: str) -> VTAConfig:
    """The configuration a `vta_target` string names (LoweringError if it is not one)."""
    words = target.split()
    options = [w for w in words[1:] if w.startswith("-config=")]
    if words[:1] != ["vta"] or len(options) != len(words) - 1 or len(options) > 1:
        raise LoweringError(f"target {target!r} is not vta [-config=FIELD:VALUE,...]")
    changes = {}
    for item in filter(None, options[0][len("-config=") :].split(",") if options else []):
        name, _, text = item.partition(":")
        kind = field_type(name)
        if kind not in (int, float, bool) or name in _NOT_ARCHITECTURE:
            raise LoweringError(f"target {target!r}: {name!r} is not a configuration field")
        try:
            changes[name] = bool(int(text)) if kind is bool else kind(text)
        except ValueError:
            why = f"{name} = {text!r} is not a {kind.__name__}"
            raise LoweringError(f"target {target!r}: {why}") from None
    cfg = VTAConfig.load(None).replace(**changes)
    return cfg if not changes else cfg.replace(name=cfg.config_string, description=target)
