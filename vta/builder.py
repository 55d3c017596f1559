"""`ProgramBuilder`: write accelerator Programs by hand (tests, RTL benches, demo, compiler).

It works like the reference VTA runtime: named DRAM buffers in one image, 2-D strided
LOAD/STORE with zero padding, GEMM/ALU over micro-op kernels cached in uop SRAM, dependence tokens
(a pop attaches to the next instruction of its module, a push to the last instruction or a NOP),
and the final Synchronize sequence before FINISH.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from .config import VTAConfig
from .errors import ISAError, ProgramError
from .isa import (
    LOAD_ROUTES,
    AluInsn,
    AluOp,
    FinishInsn,
    GemmInsn,
    Insn,
    MemInsn,
    MemType,
    Module,
    Opcode,
    TokenQueue,
    encode_stream,
    encode_uops,
    route,
)
from .program import ROLES, BufferSpec, Program
from .validate import validate_program

UOP_BUFFER = "uops"
MIN_ALIGNMENT = 64

Loop = tuple[int, int, int] | tuple[int, int, int, int]


def as_module(module: Module | str | int) -> Module:
    """A `Module` from its name ("load", "compute", "store") or number (0, 1, 2)."""
    if isinstance(module, Module):  # the common case, without the enum's lookup
        return module
    try:
        return Module[module.upper()] if isinstance(module, str) else Module(module)
    except (KeyError, ValueError):
        raise ProgramError(f"unknown module {module!r} (valid: load, compute, store)") from None


def _mem_type(memory_type: MemType | str) -> MemType:
    """A memory type a LOAD fills, by enum or name (ACC_8BIT and OUT are not loadable)."""
    if isinstance(memory_type, MemType) and memory_type in LOAD_ROUTES:
        return memory_type
    for mem in LOAD_ROUTES:
        if memory_type in (mem, mem.name, mem.name.lower()):
            return mem
    valid = ", ".join(m.name for m in LOAD_ROUTES)
    raise ProgramError(f"memory type {memory_type!r} is not supported by LOAD (valid: {valid})")


def _alu_op(op: AluOp | str) -> AluOp:
    if isinstance(op, str):
        try:
            return AluOp[op.upper()]
        except KeyError:
            valid = ", ".join(o.name for o in AluOp)
            raise ProgramError(f"unknown ALU opcode {op!r} (valid: {valid})") from None
    return AluOp(op)


@dataclasses.dataclass
class _Kernel:
    """A micro-op kernel: its place in the uop DRAM region and, while resident, in uop SRAM."""

    dram_offset: int
    size: int
    sram: tuple[int, int] | None = None


class ProgramBuilder:
    """Builds one Program: buffers, instructions, micro-op kernels and dependence tokens."""

    def __init__(self, config: VTAConfig | str | None = None):
        self.config = VTAConfig.load(config)
        self.alignment = max(MIN_ALIGNMENT, *self.config.elem_bytes.values())
        # instructions as (class, fields) until `build`: tokens and micro-op addresses are
        # filled in later, and frozen instructions would have to be copied for each change
        self._insns: list[tuple[type[Insn], dict]] = []
        self._last_module: Module | None = None  # of the last instruction (None: FINISH, none)
        self._buffers: dict[str, BufferSpec] = {}
        self._init_data: list[tuple[int, np.ndarray]] = []
        self._dram_size = 0
        self._pending_pops: dict[Module, set[str]] = {m: set() for m in Module}
        self._kernels: dict[bytes, _Kernel] = {}  # by encoded micro-ops
        self._encoded: dict[bytes, np.ndarray] = {}  # micro-op words by (dst, src, wgt) rows
        self._resident: list[_Kernel] = []
        self._uop_words: list[np.ndarray] = []
        self._uop_count = 0
        self._uop_ring_end = 0
        self._uop_fixups: list[tuple[int, int]] = []  # (LOAD UOP index, offset in uop region)

    @property
    def insns(self) -> list[Insn]:
        """The instructions so far (micro-op loads get their DRAM address in `build`)."""
        return [cls(**fields) for cls, fields in self._insns]

    # ------------------------------------------------------------------------- DRAM buffers
    def _align(self, offset: int) -> int:
        return -(-offset // self.alignment) * self.alignment

    def buffer(
        self,
        name: str,
        shape: Sequence[int],
        dtype: str | np.dtype,
        role: str,
        data: np.ndarray | None = None,
    ) -> BufferSpec:
        """Allocate a named DRAM buffer, aligned so every memory type addresses it in elements."""
        if name in self._buffers or name == UOP_BUFFER:
            raise ProgramError(f"buffer {name!r} is already defined (or reserved)")
        if role not in ROLES or role == "uop":
            raise ProgramError(f"buffer {name!r}: role {role!r} not in {ROLES[:-1]}")
        spec = BufferSpec(
            name,
            self._align(self._dram_size),
            tuple(int(s) for s in shape),
            np.dtype(dtype).name,
            role,
        )
        if data is not None:
            arr = np.asarray(data)
            if arr.shape != spec.shape:
                raise ProgramError(
                    f"buffer {name!r}: data of shape {arr.shape} given for shape {spec.shape}"
                )
            if not np.can_cast(arr.dtype, spec.dtype, casting="same_kind"):
                raise ProgramError(f"buffer {name!r}: {arr.dtype} data given for {spec.dtype}")
            self._init_data.append((spec.offset, arr.astype(spec.dtype)))
        self._buffers[name] = spec
        self._dram_size = spec.offset + spec.nbytes
        return spec

    def _buffer(self, buffer: BufferSpec | str) -> BufferSpec:
        name = buffer if isinstance(buffer, str) else buffer.name
        if name not in self._buffers:
            raise ProgramError(f"no buffer {name!r} (defined: {', '.join(self._buffers)})")
        return self._buffers[name]

    def _dram_base(self, spec: BufferSpec, memory_type: MemType, elem_offset: int) -> int:
        elem = self.config.elem_bytes[memory_type]
        if spec.offset % elem:
            raise ProgramError(
                f"buffer {spec.name!r} at byte {spec.offset} is not aligned to the "
                f"{elem}-byte {memory_type.name} element"
            )
        return spec.offset // elem + elem_offset

    # ------------------------------------------------------------------------- instructions
    @staticmethod
    def _module(cls: type[Insn], fields: dict) -> Module:
        if cls is MemInsn:
            return route(
                Opcode.STORE if fields.get("is_store") else Opcode.LOAD, fields["memory_type"]
            )
        return Module.COMPUTE

    def _emit(self, cls: type[Insn], **fields) -> int:
        """Append an instruction, attaching the pending pops of its module; returns its index."""
        module = self._module(cls, fields)
        pending = self._pending_pops[module]
        fields.update(dict.fromkeys(pending, True))
        pending.clear()
        self._insns.append((cls, fields))
        self._last_module = module
        return len(self._insns) - 1

    def load(
        self,
        memory_type: MemType | str,
        sram_base: int,
        buffer: BufferSpec | str,
        elem_offset: int,
        y_size: int,
        x_size: int,
        x_stride: int,
        pad: tuple[int, int, int, int] = (0, 0, 0, 0),
    ) -> int:
        """2-D strided LOAD of `y_size` x `x_size` elements, zero padding (y0, y1, x0, x1)."""
        mem = _mem_type(memory_type)
        spec = self._buffer(buffer)
        y0, y1, x0, x1 = pad
        return self._emit(
            MemInsn,
            memory_type=mem,
            sram_base=sram_base,
            dram_base=self._dram_base(spec, mem, elem_offset),
            y_size=y_size,
            x_size=x_size,
            x_stride=x_stride,
            y_pad_0=y0,
            y_pad_1=y1,
            x_pad_0=x0,
            x_pad_1=x1,
        )

    def store(
        self,
        sram_base: int,
        buffer: BufferSpec | str,
        elem_offset: int,
        y_size: int,
        x_size: int,
        x_stride: int,
    ) -> int:
        """2-D strided STORE of OUT rows `sram_base + y * x_size` to DRAM rows `y * x_stride`."""
        spec = self._buffer(buffer)
        return self._emit(
            MemInsn,
            is_store=True,
            memory_type=MemType.OUT,
            sram_base=sram_base,
            dram_base=self._dram_base(spec, MemType.OUT, elem_offset),
            y_size=y_size,
            x_size=x_size,
            x_stride=x_stride,
        )

    def gemm(
        self, uops: np.ndarray | Sequence, loops: Sequence[Loop] = (), reset: bool = False
    ) -> int:
        """GEMM over micro-ops (dst, src, wgt) and up to two affine loops, outer first."""
        bgn, end = self._place_kernel(uops)
        out, inn = self._loop_fields(loops, inner_first=False)
        return self._emit(
            GemmInsn,
            reset_reg=reset,
            uop_bgn=bgn,
            uop_end=end,
            iter_out=out[0],
            iter_in=inn[0],
            dst_factor_out=out[1],
            dst_factor_in=inn[1],
            src_factor_out=out[2],
            src_factor_in=inn[2],
            wgt_factor_out=out[3],
            wgt_factor_in=inn[3],
        )

    def alu(
        self,
        op: AluOp | str,
        uops: np.ndarray | Sequence,
        loops: Sequence[Loop] = (),
        use_imm: bool = False,
        imm: int = 0,
    ) -> int:
        """ALU: ACC[dst] = op(ACC[dst], imm or ACC[src]) over micro-ops (dst, src[, 0])."""
        arr = np.asarray(uops, dtype=np.int64)
        if arr.ndim == 2 and arr.shape[1] == 2:
            arr = np.concatenate([arr, np.zeros((len(arr), 1), np.int64)], axis=1)
        bgn, end = self._place_kernel(arr)
        out, inn = self._loop_fields(loops, inner_first=True)
        return self._emit(
            AluInsn,
            uop_bgn=bgn,
            uop_end=end,
            iter_out=out[0],
            iter_in=inn[0],
            dst_factor_out=out[1],
            dst_factor_in=inn[1],
            src_factor_out=out[2],
            src_factor_in=inn[2],
            alu_opcode=_alu_op(op),
            use_imm=use_imm,
            imm=imm,
        )

    @staticmethod
    def _loop_fields(loops: Sequence[Loop], inner_first: bool) -> tuple[tuple, tuple]:
        """Map loops (extent, dst, src[, wgt]) onto (iter_out, iter_in) as the reference does:
        missing loops are (1, 0, 0, 0); a single ALU loop becomes the inner one."""
        if len(loops) > 2:
            raise ProgramError(f"at most two micro-op loops, got {len(loops)}")
        full = [tuple(loop) + (0,) * (4 - len(loop)) for loop in loops]
        unit = (1, 0, 0, 0)
        if len(full) == 1 and inner_first:
            full.insert(0, unit)
        full += [unit] * (2 - len(full))
        return full[0], full[1]

    # ------------------------------------------------------------------------- micro-op memory
    def _place_kernel(self, uops: np.ndarray | Sequence) -> tuple[int, int]:
        """Make a kernel resident in uop SRAM (ring allocation with eviction); emit its LOAD UOP."""
        raw = np.asarray(uops, dtype=np.int64)
        raw_key = raw.tobytes() + bytes(raw.shape[-1:])
        words = self._encoded.get(raw_key)
        if words is None:
            words = self._encoded[raw_key] = encode_uops(raw, self.config)
        if not words.size:
            raise ProgramError("a micro-op kernel needs at least one micro-op")
        depth = self.config.depth[MemType.UOP]
        if words.size > depth:
            raise ProgramError(
                f"micro-op kernel of {words.size} entries exceeds the {depth}-entry uop buffer"
            )
        key = words.tobytes()
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = self._kernels[key] = _Kernel(self._uop_count, int(words.size))
            self._uop_words.append(words)
            self._uop_count += kernel.size
        if kernel.sram is not None:
            return kernel.sram
        start = self._uop_ring_end if self._uop_ring_end + kernel.size <= depth else 0
        end = start + kernel.size
        for other in [k for k in self._resident if k.sram[0] < end and start < k.sram[1]]:
            other.sram = None
            self._resident.remove(other)
        kernel.sram = (start, end)
        self._resident.append(kernel)
        self._uop_ring_end = end
        index = self._emit(
            MemInsn,
            memory_type=MemType.UOP,
            sram_base=start,
            y_size=1,
            x_size=kernel.size,
            x_stride=kernel.size,
        )
        self._uop_fixups.append((index, kernel.dram_offset))
        return kernel.sram

    # ------------------------------------------------------------------------- dependence tokens
    def _nop(self, module: Module, **flags: bool) -> int:
        """A reference NOP (runtime PushNoop): x_size 0, memory_type INP on load, else UOP."""
        mem = MemType.INP if module == Module.LOAD else MemType.UOP
        return self._emit(MemInsn, is_store=module == Module.STORE, memory_type=mem, **flags)

    def _commit_pending_pops(self, module: Module) -> None:
        if self._pending_pops[module]:
            self._nop(module)

    def _queue(self, producer: Module | str | int, consumer: Module | str | int) -> TokenQueue:
        try:
            return TokenQueue.between(as_module(producer), as_module(consumer))
        except ISAError as err:
            raise ProgramError(str(err)) from None

    def dep_pop(self, from_module: Module | str | int, to_module: Module | str | int) -> None:
        """The next instruction of `to_module` waits for a token from `from_module`."""
        queue = self._queue(from_module, to_module)
        pending = self._pending_pops[queue.consumer]
        if queue.pop_flag in pending:
            self._commit_pending_pops(queue.consumer)
        pending.add(queue.pop_flag)

    def dep_push(self, from_module: Module | str | int, to_module: Module | str | int) -> None:
        """`from_module` sends a token to `to_module` once its last instruction so far ends."""
        queue = self._queue(from_module, to_module)
        src, flag = queue.producer, queue.push_flag
        self._commit_pending_pops(src)
        if self._last_module == src:
            fields = self._insns[-1][1]
            if not fields.get(flag):
                fields[flag] = True
                return
        self._nop(src, **{flag: True})

    # ------------------------------------------------------------------------- finishing
    def finish(self) -> None:
        """The reference Synchronize: drain load and store into compute, then FINISH."""
        self.dep_push(Module.STORE, Module.COMPUTE)
        self.dep_push(Module.LOAD, Module.COMPUTE)
        self.dep_pop(Module.STORE, Module.COMPUTE)
        self.dep_pop(Module.LOAD, Module.COMPUTE)
        self._commit_pending_pops(Module.COMPUTE)
        self._insns.append((FinishInsn, {}))
        self._last_module = None

    def _uop_spec(self) -> BufferSpec | None:
        """The micro-op region, after the buffers (None without micro-ops)."""
        if not self._uop_words:
            return None
        offset = self._align(self._dram_size)
        return BufferSpec(UOP_BUFFER, offset, (self._uop_count,), "uint32", "uop")

    def stream(self) -> list[Insn]:
        """The instructions as `build` encodes them (micro-op loads addressed where it places
        the micro-ops), without encoding them or making the DRAM image: all a timing-only
        simulator needs."""
        uop_spec = self._uop_spec()
        if uop_spec is not None:
            base = uop_spec.offset // self.config.elem_bytes[MemType.UOP]
            for index, offset in self._uop_fixups:
                self._insns[index][1]["dram_base"] = base + offset
        return [cls(**fields) for cls, fields in self._insns]

    def build(self, validate: bool = True) -> Program:
        """The Program: buffers, then the micro-op region; validated unless told otherwise."""
        insns = self.stream()
        buffers = list(self._buffers.values())
        size = self._dram_size
        uop_spec = self._uop_spec()
        if uop_spec is not None:
            buffers.append(uop_spec)
            size = uop_spec.offset + uop_spec.nbytes
        dram = np.zeros(size, dtype=np.uint8)
        for offset, arr in self._init_data:
            dram[offset : offset + arr.nbytes] = (
                np.ascontiguousarray(arr).view(np.uint8).reshape(-1)
            )
        if uop_spec is not None:
            words = np.concatenate(self._uop_words).astype("<u4")
            dram[uop_spec.offset : uop_spec.offset + words.nbytes] = words.view(np.uint8)
        program = Program(self.config, encode_stream(insns, self.config), dram, buffers)
        # the stream as built: decoding the bytes again gives these instructions (encode and
        # decode are exact inverses), which a knob search timing many Programs would repeat
        program.__dict__["instructions"] = insns
        if validate:
            validate_program(program)
        return program
