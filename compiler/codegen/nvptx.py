"""NVPTX code generation: GPU kernels to LLVM IR for nvptx64-nvidia-cuda, then PTX.

The expression and statement emission is the CPU backend's (`CodeGenLLVM`); what differs on a
GPU is here: kernels are `ptx_kernel` functions taking global (addrspace 1) noalias pointers
(loads of buffers a kernel only reads go through the non-coherent cache); thread and block
indices are NVVM special-register intrinsics; `shared` buffers are addrspace-3 arrays of the
kernel, `local` ones stack arrays (registers once unrolled); barriers are `llvm.nvvm.barrier0`;
vector accesses promise 16-byte alignment where the index is provably a multiple of the vector
width, so they become ld/st.v4; math functions call libdevice (`__nv_expf`, ...), linked from
the nvidia-cuda-nvcc wheel when a kernel uses one. Launch bounds (`.reqntid`) tell ptxas the
block size so it can budget registers.
"""

from __future__ import annotations

import os
from functools import cache

import llvmlite.binding as llvm
from llvmlite import ir

from ..arith import Analyzer
from ..errors import CodegenError
from ..tir import dtype as dt
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.op import UNARY_MATH
from ..tir.transform.thread import BARRIER, launch_extents
from .llvm import I32, STACK_LIMIT, CodeGenLLVM, _Fn, mem_type
from .nvptx_arch import TRIPLE, GPUArch
from .target import Target, optimize, parse_ir, target_machine

GLOBAL_PTR = ir.PointerType(addrspace=1)
SHARED_AS = 3
VECTOR_ALIGN = 16  # bytes: the widest PTX vector access (v4.b32)
_SREG = {
    "threadIdx": "tid",
    "blockIdx": "ctaid",
}
# math functions with a libdevice implementation (__nv_expf, __nv_exp, ...)
_LIBDEVICE = {*UNARY_MATH, "pow"}


def nvcc_dir() -> str | None:
    """The nvidia-cuda-nvcc wheel's folder (ptxas, libdevice), if installed."""
    try:
        import nvidia.cuda_nvcc as nvcc  # the gpu extra
    except ImportError:
        return None
    return next(iter(nvcc.__path__), None)


@cache
def _libdevice() -> bytes:
    base = nvcc_dir()
    path = os.path.join(base, "nvvm", "libdevice", "libdevice.10.bc") if base else ""
    if not path or not os.path.exists(path):
        raise CodegenError(
            "math functions on the GPU need libdevice from the nvidia-cuda-nvcc-cu12 wheel: "
            "pip install 'vta-codesign[gpu]'"
        )
    with open(path, "rb") as f:
        return f.read()


class CodeGenNVPTX(CodeGenLLVM):
    """Emits DeviceKernels into one NVPTX module."""

    def __init__(self, name: str = "module"):
        super().__init__(name, TRIPLE)
        self.uses_libdevice = False
        self.kernel_names: list[str] = []
        self._ana = Analyzer()

    def add_kernel(self, kernel) -> None:
        fnty = ir.FunctionType(ir.VoidType(), [GLOBAL_PTR] * len(kernel.params))
        func = ir.Function(self.module, fnty, kernel.name)
        func.calling_convention = "ptx_kernel"
        for arg, buf in zip(func.args, kernel.params, strict=True):
            arg.name = buf.name
            arg.add_attribute("noalias")  # -O3 infers readonly where unwritten: ld.global.nc
        self.fn = _Fn(func)
        for buf, arg in zip(kernel.params, func.args, strict=True):
            self.fn.vars[buf.data] = arg
        _, var, body = launch_extents(kernel.body)
        for tag, v in var.items():
            kind, axis = tag.split(".")
            sreg = self._decl(f"llvm.nvvm.read.ptx.sreg.{_SREG[kind]}.{axis}", I32, [])
            self.fn.vars[v] = self.b.call(sreg, [], name=tag)
        self.stmt(body)
        self.fn.finish()
        self._launch_bounds(func, kernel.block)
        self.kernel_names.append(kernel.name)

    def _launch_bounds(self, func: ir.Function, block: tuple[int, int, int]) -> None:
        md = self.module.add_named_metadata("nvvm.annotations")
        for axis, n in zip("xyz", block, strict=True):
            md.add(self.module.add_metadata([func, f"reqntid{axis}", ir.Constant(I32, n)]))

    # ---- statements ----------------------------------------------------------------------
    def stmt_For(self, s: S.For) -> None:
        if s.kind in ("thread_binding", "parallel", "vthread"):
            raise CodegenError(
                f"nvptx codegen: loop '{s.loop_var.name}' is still a {s.kind} loop; "
                "GPU functions are lowered with compiler.driver_gpu first"
            )
        super().stmt_For(s)

    def stmt_Allocate(self, s: S.Allocate) -> None:
        buf = s.buffer
        if buf.scope == "shared":
            ty = ir.ArrayType(mem_type(buf.dtype), buf.const_size())
            name = self.module.get_unique_name(f"{self.fn.func.name}.{buf.name}")
            g = ir.GlobalVariable(self.module, ty, name, addrspace=SHARED_AS)
            g.linkage = "internal"
            g.align = VECTOR_ALIGN
            g.initializer = ir.Constant(ty, ir.Undefined)
            g.type = ir.PointerType(addrspace=SHARED_AS)  # opaque, like the parameters
            self.fn.vars[buf.data] = g
            self.stmt(s.body)
            return
        if buf.scope == "local" and buf.nbytes <= STACK_LIMIT:
            super().stmt_Allocate(s)
            return
        raise CodegenError(
            f"nvptx codegen: buffer '{buf.name}' ({buf.nbytes} B, scope {buf.scope!r}) cannot "
            "be allocated inside a kernel; give it scope 'shared' or 'local' (small), or "
            "compute it at root"
        )

    # ---- expressions ---------------------------------------------------------------------
    def expr_Call(self, e: E.Call) -> ir.Value:
        if e.op == BARRIER:
            return self.b.call(self._decl("llvm.nvvm.barrier0", ir.VoidType(), []), [])
        if e.extern:
            raise CodegenError(f"nvptx codegen: extern call '{e.op}' has no GPU definition")
        return super().expr_Call(e)

    def _math_call(self, op: str, args: list[ir.Value], dtype: str) -> ir.Value:
        op = {"fast_erf": "erf", "fast_exp": "exp"}.get(op, op)  # a GPU lane is scalar: libdevice's
        if op not in _LIBDEVICE:
            raise CodegenError(f"nvptx codegen: no GPU implementation of '{op}'")
        self.uses_libdevice = True
        bits = dt.parse(dtype).bits
        sty = {32: ir.FloatType(), 64: ir.DoubleType()}[bits]
        f = self._decl(f"__nv_{op}{'f' if bits == 32 else ''}", sty, [sty] * len(args))
        if dt.lanes(dtype) == 1:
            return self.b.call(f, args)
        out = ir.Constant(ir.VectorType(sty, dt.lanes(dtype)), ir.Undefined)
        for k in range(dt.lanes(dtype)):
            lane = [self.b.extract_element(a, ir.Constant(I32, k)) for a in args]
            out = self.b.insert_element(out, self.b.call(f, lane), ir.Constant(I32, k))
        return out

    def _align(self, buf: S.Buffer, index: E.Expr) -> int:
        item = dt.itemsize(buf.dtype)
        if not (isinstance(index, E.Ramp) and E.is_const(index.stride, 1)):
            return item
        width = item * index.lanes
        if width > VECTOR_ALIGN or width & (width - 1):
            return item
        lin = self._ana.to_lin(index.base)
        coefs = [c for _, c in lin.terms.values()] + [lin.const]
        return width if all(c % index.lanes == 0 for c in coefs) else item


def nvptx_target(arch: GPUArch) -> Target:
    return Target(TRIPLE, arch.name, "")


def compile_ptx(kernels: list, arch: GPUArch, name: str = "module") -> tuple[str, str]:
    """(optimized LLVM IR, PTX) of the kernels for `arch`."""
    cg = CodeGenNVPTX(name)
    for k in kernels:
        cg.add_kernel(k)
    target = nvptx_target(arch)
    tm = target_machine(target, pic=True)
    try:
        mod = parse_ir(str(cg.module), tm, TRIPLE)
    except RuntimeError as err:
        raise CodegenError(f"nvptx codegen produced invalid LLVM IR: {err}") from err
    if cg.uses_libdevice:
        mod.link_in(llvm.parse_bitcode(_libdevice()))
        for f in mod.functions:
            if f.name not in cg.kernel_names and not f.is_declaration:
                f.linkage = llvm.Linkage.internal
    optimize(mod, tm)
    return str(mod), tm.emit_assembly(mod)
