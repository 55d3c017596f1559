"""LLVM IR generation from a lowered PrimFunc with llvmlite.ir.

Each PrimFunc becomes `void name(T0* noalias, T1* noalias, ...)` taking one pointer per buffer.
Parallel loops are outlined into `void f(ptr ctx, i64 begin, i64 end)` and run by the thread
pool of `parallel.py` (`vta_parallel_for`): the threads claim chunks of iterations until none
is left.
"""

from __future__ import annotations

import math

from llvmlite import ir

from ..errors import CodegenError
from ..tir import dtype as dt
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.functor import collect, contains
from .abi import OOB_PREFIX
from .parallel import SYMBOL as PARALLEL_FOR
from .target import long_bits

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
STACK_LIMIT = 1 << 20  # bytes; larger allocations go to the heap

_INTRINSIC_MATH = {
    "exp",
    "exp2",
    "log",
    "log2",
    "log10",
    "sqrt",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sinh",
    "cosh",
    "atan",
    "asin",
    "acos",
    "fabs",
    "floor",
    "ceil",
    "round",
    "nearbyint",
    "trunc",
    "pow",
}
_LIBM = {"erf", "asinh", "acosh", "atanh"}
# float32 erf(x) ~ x P(x^2) / Q(x^2) on [-4, 4] (erf is 1 in float32 beyond), coefficients
# from the highest power down: within 6.5e-8 of erf in exact arithmetic
_ERF_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
          -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
          -1.60960333262415e-02)  # fmt: skip
_ERF_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
          -7.37332916720468e-03, -1.42647390514189e-02)  # fmt: skip
_ERF_CLAMP = 4.0
# float32 exp(x) = 2^n exp(r), n = round(x / ln 2), r = x - n ln 2 (ln 2 in two parts, so r is
# exact), exp(r) ~ 1 + r + r^2 (c0 + c1 r + ... + c5 r^5) on |r| <= ln 2 / 2
_EXP_LN2 = (0.693359375, -2.12194440e-4)
_EXP_POLY = (5.0000001201e-1, 1.6666665459e-1, 4.1665795894e-2, 8.3334519073e-3,
             1.3981999507e-3, 1.9875691500e-4)  # fmt: skip
_EXP_RANGE = (-86.6, 88.72)  # 0 below (n >= -125: 2^n exp(r) normal), inf above


def scalar_type(dtype: str) -> ir.Type:
    t = dt.parse(dtype)
    if t.code in ("int", "uint"):
        return ir.IntType(t.bits)
    if t.code == "bool":
        return I1
    if t.code == "float":
        return {16: ir.HalfType(), 32: ir.FloatType(), 64: ir.DoubleType()}[t.bits]
    return PTR


def llvm_type(dtype: str) -> ir.Type:
    base = scalar_type(dt.element_of(dtype))
    n = dt.lanes(dtype)
    return base if n == 1 else ir.VectorType(base, n)


def mem_type(dtype: str) -> ir.Type:
    """How a value of `dtype` sits in memory (bool as one byte)."""
    t = dt.parse(dtype)
    base = I8 if t.code == "bool" else scalar_type(dt.element_of(dtype))
    return base if t.lanes == 1 else ir.VectorType(base, t.lanes)


def _mangle(ty: ir.Type) -> str:
    """The overload suffix of an LLVM intrinsic: f32, v16f32, i64 ..."""
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{_mangle(ty.element)}"
    if isinstance(ty, ir.IntType):
        return f"i{ty.width}"
    return {ir.HalfType: "f16", ir.FloatType: "f32", ir.DoubleType: "f64"}[type(ty)]


class _Fn:
    """Per-function emission state."""

    def __init__(self, func: ir.Function):
        self.func = func
        self.entry = func.append_basic_block("entry")
        self.builder = ir.IRBuilder(self.entry)
        self.body = func.append_basic_block("body")
        self.builder.position_at_end(self.body)
        self.vars: dict[E.Var, ir.Value] = {}
        self.in_parallel = False

    def finish(self) -> None:
        self.builder.ret_void()
        with self.builder.goto_block(self.entry):
            self.builder.branch(self.body)


class CodeGenLLVM:
    """Emits PrimFuncs into one llvmlite module.

    With `bounds_check`, an access whose index depends on loaded data (a gather or scatter) is
    checked against the buffer's extent: an index out of range is replaced by 0 and recorded in
    the function's `OOB_PREFIX` global, which the runtime turns into an exception after the call
    (`checked[function]` lists the checked buffers' names)."""

    def __init__(self, name: str = "module", triple: str = "", bounds_check: bool = True):
        self.module = ir.Module(name=name)
        if triple:
            self.module.triple = triple
        self.fn: _Fn = None  # type: ignore[assignment]
        self._n = 0
        self.bounds_check = bounds_check
        self.checked: dict[str, list[str]] = {}
        self._func_name = ""
        self._int_flags: tuple[str, ...] = ()  # ("nsw",) inside an index that reads no memory

    @property
    def b(self) -> ir.IRBuilder:
        return self.fn.builder

    def _name(self, base: str) -> str:
        self._n += 1
        return f"{base}.{self._n}"

    # ---- functions -----------------------------------------------------------------------
    def add_function(self, f: S.PrimFunc) -> None:
        fnty = ir.FunctionType(ir.VoidType(), [PTR] * len(f.params))
        func = ir.Function(self.module, fnty, f.name)
        for a in func.args:
            a.add_attribute("noalias")
        self.fn = _Fn(func)
        self._func_name = f.name
        for arg, buf in zip(func.args, f.params, strict=False):
            arg.name = buf.name
            self.fn.vars[buf.data] = arg
        self.stmt(f.body)
        self.fn.finish()

    def _checked_index(self, buf: S.Buffer, idx: ir.Value, span: int = 1) -> ir.Value:
        """`idx` (i64) when [idx, idx + span) lies in the buffer, else 0 with the index recorded
        in the function's out-of-range global."""
        extent = buf.const_size()
        names = self.checked.setdefault(self._func_name, [])
        if buf.name not in names:
            names.append(buf.name)
        gname = OOB_PREFIX + self._func_name
        record = self.module.globals.get(gname)
        if record is None:
            record = ir.GlobalVariable(self.module, ir.ArrayType(I64, 2), gname)
            record.initializer = ir.Constant(ir.ArrayType(I64, 2), [0, 0])
        ok = self.b.icmp_unsigned("<=", idx, ir.Constant(I64, max(extent - span, -1)))
        if extent < span:
            ok = ir.Constant(I1, 0)
        with self.b.if_then(self.b.not_(ok), likely=False):
            slot = self.b.gep(record, [ir.Constant(I32, 0), ir.Constant(I32, 0)])
            self.b.store(ir.Constant(I64, names.index(buf.name) + 1), slot)
            slot = self.b.gep(record, [ir.Constant(I32, 0), ir.Constant(I32, 1)])
            self.b.store(idx, slot)
        return self.b.select(ok, idx, ir.Constant(I64, 0))

    def _decl(
        self, name: str, ret: ir.Type, args: list[ir.Type], var_arg: bool = False
    ) -> ir.Function:
        if name in self.module.globals:
            return self.module.globals[name]
        return ir.Function(self.module, ir.FunctionType(ret, args, var_arg=var_arg), name)

    def _intrinsic(self, name: str, ty: ir.Type, nargs: int) -> ir.Function:
        return self._decl(f"{name}.{_mangle(ty)}", ty, [ty] * nargs)

    # ---- statements ----------------------------------------------------------------------
    def stmt(self, s: S.Stmt) -> None:
        fn = getattr(self, "stmt_" + type(s).__name__, None)
        if fn is None:
            raise CodegenError(f"llvm codegen: unsupported statement {type(s).__name__}")
        fn(s)

    def stmt_SeqStmt(self, s: S.SeqStmt) -> None:
        for x in s.seq:
            self.stmt(x)

    def stmt_Evaluate(self, s: S.Evaluate) -> None:
        if not isinstance(s.value, (E.IntImm, E.FloatImm)):
            self.expr(s.value)

    def stmt_AttrStmt(self, s: S.AttrStmt) -> None:
        self.stmt(s.body)

    def stmt_LetStmt(self, s: S.LetStmt) -> None:
        self.fn.vars[s.var] = self.expr(s.value)
        self.stmt(s.body)

    def stmt_BufferStore(self, s: S.BufferStore) -> None:
        value = self.expr(s.value)
        if dt.is_bool(s.value.dtype):
            value = self.b.zext(value, mem_type(s.value.dtype))
        ptr, vector = self._address(s.buffer, s.indices[0], s.value.dtype)
        if vector is None:
            self.b.store(value, ptr, align=self._align(s.buffer, s.indices[0]))
            return
        for k, p in enumerate(vector):
            self.b.store(
                self.b.extract_element(value, ir.Constant(I32, k)),
                p,
                align=dt.itemsize(s.buffer.dtype),
            )

    def stmt_IfThenElse(self, s: S.IfThenElse) -> None:
        cond = self.expr(s.cond)
        if s.else_case is None:
            with self.b.if_then(cond):
                self.stmt(s.then_case)
            return
        with self.b.if_else(cond) as (then, other):
            with then:
                self.stmt(s.then_case)
            with other:
                self.stmt(s.else_case)

    def stmt_Allocate(self, s: S.Allocate) -> None:
        buf = s.buffer
        n = buf.const_size()
        ety = mem_type(buf.dtype)
        nbytes = n * dt.itemsize(buf.dtype)
        if nbytes <= STACK_LIMIT:
            with self.b.goto_block(self.fn.entry):
                ptr = self.b.alloca(ir.ArrayType(ety, n), name=buf.name)
                ptr.align = 64
                ptr.type = PTR  # address it as an opaque pointer, like the parameters
            self.fn.vars[buf.data] = ptr
            self.stmt(s.body)
            return
        size_t = ir.IntType(long_bits(self.module.triple))  # C's size_t
        alloc = self._decl("aligned_alloc", PTR, [size_t, size_t])
        size = ir.Constant(size_t, -(-nbytes // 64) * 64)
        ptr = self.b.call(alloc, [ir.Constant(size_t, 64), size])
        self.fn.vars[buf.data] = ptr
        self.stmt(s.body)
        self.b.call(self._decl("free", ir.VoidType(), [PTR]), [ptr])

    def stmt_For(self, s: S.For) -> None:
        if s.kind == "thread_binding":
            raise CodegenError(
                f"llvm codegen: loop '{s.loop_var.name}' is bound to '{s.thread_tag}', "
                "which the CPU target has no notion of; bind only for GPU targets"
            )
        if s.kind == "parallel" and not self.fn.in_parallel:
            self._parallel_for(s)
            return
        ty = llvm_type(s.loop_var.dtype)
        lo, ext = self._int_as(self.expr(s.min), ty), self._int_as(self.expr(s.extent), ty)
        self._loop(s.loop_var, lo, self.b.add(lo, ext), lambda: self.stmt(s.body))

    def _int_as(self, v: ir.Value, ty: ir.IntType) -> ir.Value:
        """A signed integer value widened or narrowed to `ty`."""
        if v.type.width < ty.width:
            return self.b.sext(v, ty)
        return self.b.trunc(v, ty) if v.type.width > ty.width else v

    def _loop(self, var: E.Var, begin: ir.Value, end: ir.Value, body) -> None:
        """for var in [begin, end), counting in the loop variable's own type (int64 when the
        extent or its bounds need it)."""
        b = self.b
        ty = llvm_type(var.dtype)
        begin, end = self._int_as(begin, ty), self._int_as(end, ty)
        pre = b.block
        head = b.append_basic_block(self._name("for.head"))
        loop = b.append_basic_block(self._name("for.body"))
        done = b.append_basic_block(self._name("for.end"))
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(begin.type, name=var.name)
        i.add_incoming(begin, pre)
        b.cbranch(b.icmp_signed("<", i, end), loop, done)
        b.position_at_end(loop)
        self.fn.vars[var] = i
        body()
        nxt = b.add(i, ir.Constant(i.type, 1), flags=("nsw",))
        i.add_incoming(nxt, b.block)
        b.branch(head)
        b.position_at_end(done)

    def _parallel_for(self, s: S.For) -> None:
        """Outline the loop into `void f(ptr ctx, i64 begin, i64 end)` and run it with
        vta_parallel_for: threads take chunks of iterations until none is left, so a thread
        delayed by another process on its core costs only the chunk it holds, not a static half
        of the loop, and a thread that has not started yet costs nothing."""
        captured = self._captured(s)
        values = [self.fn.vars[v] for v in captured]
        ctx_ty = ir.LiteralStructType([v.type for v in values])
        with self.b.goto_block(self.fn.entry):
            ctx = self.b.alloca(ctx_ty, name="par.ctx")
            ctx.type = PTR
        for k, v in enumerate(values):
            self.b.store(
                v, self.b.gep(ctx, [ir.Constant(I32, 0), ir.Constant(I32, k)], source_etype=ctx_ty)
            )
        outer = self.fn
        name = self._name(f"{outer.func.name}.par")
        func = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR, I64, I64]), name)
        func.linkage = "internal"
        body = self._parallel_body(name, captured, [v.type for v in values])
        self.fn = _Fn(func)
        loaded = [
            self.b.load(
                self.b.gep(
                    func.args[0], [ir.Constant(I32, 0), ir.Constant(I32, k)], source_etype=ctx_ty
                ),
                typ=ctx_ty.elements[k],
                name=var.name,
            )
            for k, var in enumerate(captured)
        ]
        self.b.call(body, [*loaded, func.args[1], func.args[2]])
        self.fn.finish()
        self.fn = _Fn(body)
        self.fn.in_parallel = True
        self.fn.vars.update(zip(captured, body.args, strict=False))
        self._chunk_loop(s)
        self.fn.finish()
        self.fn = outer
        ext = self._index(s.extent)
        chunk = ir.Constant(I64, 0)  # the runtime's choice: a few chunks per thread
        run = self._decl(PARALLEL_FOR, ir.VoidType(), [PTR, PTR, I64, I64])
        self.b.call(run, [func, ctx, ext, chunk])

    def _parallel_body(self, name: str, captured: list[E.Var], types: list[ir.Type]) -> ir.Function:
        """`void body(captured..., i64 begin, i64 end)`, inlined into the outlined loop: its
        buffer pointers are noalias parameters, as the kernel's are (loaded from the context,
        they would be pointers LLVM cannot tell apart: a memory accumulator's stores then
        clobbered the input's loads, and stayed in the loop, one per FMA)."""
        body = ir.Function(
            self.module, ir.FunctionType(ir.VoidType(), [*types, I64, I64]), f"{name}.body"
        )
        body.linkage = "internal"
        body.attributes.add("alwaysinline")
        for arg, var in zip(body.args, captured, strict=False):
            arg.name = var.name
            if isinstance(arg.type, ir.PointerType):
                arg.add_attribute("noalias")
        return body

    def _chunk_loop(self, s: S.For) -> None:
        """The outlined body: the iterations [min + begin, min + end) of one chunk."""
        b = self.b
        ty = llvm_type(s.loop_var.dtype)
        lo = self._int_as(self.expr(s.min), ty)
        begin, stop = (
            self._int_as(self.fn.func.args[-2], ty),
            self._int_as(self.fn.func.args[-1], ty),
        )
        self._loop(s.loop_var, b.add(lo, begin), b.add(lo, stop), lambda: self.stmt(s.body))

    def _captured(self, s: S.Stmt) -> list[E.Var]:
        """Variables bound outside `s` that its body uses (scalars and buffer pointers).

        Variables bound inside `s` are not captured even if an earlier statement bound the same
        Var (loop partitioning clones loop nests with their loop variables)."""
        used: dict[E.Var, None] = {}
        bound: set[E.Var] = set()
        for n in collect(s, lambda n: True):
            if isinstance(n, E.Var):
                used[n] = None
            elif isinstance(n, (E.BufferLoad, S.BufferStore)):
                used[n.buffer.data] = None
            if isinstance(n, S.For):
                bound.add(n.loop_var)
            elif isinstance(n, S.LetStmt):
                bound.add(n.var)
            elif isinstance(n, S.Allocate):
                bound.add(n.buffer.data)
        return [v for v in used if v in self.fn.vars and v not in bound]

    # ---- expressions ---------------------------------------------------------------------
    def expr(self, e: E.Expr) -> ir.Value:
        fn = getattr(self, "expr_" + type(e).__name__, None)
        if fn is None:
            raise CodegenError(f"llvm codegen: unsupported expression {type(e).__name__}: {e!r}")
        return fn(e)

    def expr_IntImm(self, e: E.IntImm) -> ir.Value:
        return ir.Constant(llvm_type(e.dtype), e.value)

    def expr_FloatImm(self, e: E.FloatImm) -> ir.Value:
        return ir.Constant(llvm_type(e.dtype), e.value)

    def expr_Var(self, e: E.Var) -> ir.Value:
        if e not in self.fn.vars:
            raise CodegenError(f"llvm codegen: variable '{e.name}' is used outside its scope")
        return self.fn.vars[e]

    def expr_Add(self, e: E.Add) -> ir.Value:
        if dt.is_float(e.dtype):
            for m, c in ((e.a, e.b), (e.b, e.a)):
                if isinstance(m, E.Mul):
                    f = self._intrinsic("llvm.fmuladd", llvm_type(e.dtype), 3)
                    return self.b.call(f, [self.expr(m.a), self.expr(m.b), self.expr(c)])
            return self.b.fadd(self.expr(e.a), self.expr(e.b))
        return self.b.add(self.expr(e.a), self.expr(e.b), flags=self._flags(e))

    def _flags(self, e: E.Expr) -> tuple[str, ...]:
        return self._int_flags if dt.is_int(e.dtype) and not dt.is_uint(e.dtype) else ()

    def expr_Sub(self, e: E.Sub) -> ir.Value:
        a, b = self.expr(e.a), self.expr(e.b)
        return self.b.fsub(a, b) if dt.is_float(e.dtype) else self.b.sub(a, b, flags=self._flags(e))

    def expr_Mul(self, e: E.Mul) -> ir.Value:
        a, b = self.expr(e.a), self.expr(e.b)
        return self.b.fmul(a, b) if dt.is_float(e.dtype) else self.b.mul(a, b, flags=self._flags(e))

    # Integer division follows compiler/arith/intdiv.py: x // 0 == 0, x % 0 == x and
    # INT_MIN // -1 wraps; the divisor is made safe before the instruction, so nothing traps.
    def _divide(self, e: E.BinaryOp) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
        """(a, b, quotient, remainder) of integer division rounding toward zero."""
        a, b = self.expr(e.a), self.expr(e.b)
        zero, one = _splat(b.type, 0), _splat(b.type, 1)
        is_zero = self.b.icmp_unsigned("==", b, zero)
        if dt.is_uint(e.dtype):
            safe = self.b.select(is_zero, one, b)
            q, r = self.b.udiv(a, safe), self.b.urem(a, safe)
            return a, b, self.b.select(is_zero, zero, q), self.b.select(is_zero, a, r)
        is_minus_one = self.b.icmp_signed("==", b, _splat(b.type, -1))
        safe = self.b.select(self.b.or_(is_zero, is_minus_one), one, b)
        q, r = self.b.sdiv(a, safe), self.b.srem(a, safe)
        q = self.b.select(is_minus_one, self.b.sub(zero, a), q)  # -INT_MIN wraps to INT_MIN
        q = self.b.select(is_zero, zero, q)
        r = self.b.select(is_zero, a, self.b.select(is_minus_one, zero, r))
        return a, b, q, r

    def expr_Div(self, e: E.Div) -> ir.Value:
        if dt.is_float(e.dtype):
            return self.b.fdiv(self.expr(e.a), self.expr(e.b))
        return self._divide(e)[2]

    def _floor_parts(self, e: E.BinaryOp):
        a, b, q, r = self._divide(e)
        zero = _splat(a.type, 0)
        # the remainder is nonzero and its sign differs from the (nonzero) divisor's
        fix = self.b.and_(
            self.b.icmp_signed("!=", r, zero),
            self.b.xor(self.b.icmp_signed("<", r, zero), self.b.icmp_signed("<", b, zero)),
        )
        fix = self.b.and_(fix, self.b.icmp_signed("!=", b, zero))
        return a, b, q, r, fix

    def expr_FloorDiv(self, e: E.FloorDiv) -> ir.Value:
        if dt.is_float(e.dtype):
            f = self._intrinsic("llvm.floor", llvm_type(e.dtype), 1)
            return self.b.call(f, [self.b.fdiv(self.expr(e.a), self.expr(e.b))])
        if dt.is_uint(e.dtype):
            return self._divide(e)[2]
        _, _, q, _, fix = self._floor_parts(e)
        return self.b.sub(q, self.b.zext(fix, q.type))

    def expr_FloorMod(self, e: E.FloorMod) -> ir.Value:
        if dt.is_float(e.dtype):
            a, b = self.expr(e.a), self.expr(e.b)
            f = self._intrinsic("llvm.floor", llvm_type(e.dtype), 1)
            return self.b.fsub(a, self.b.fmul(b, self.b.call(f, [self.b.fdiv(a, b)])))
        if dt.is_uint(e.dtype):
            return self._divide(e)[3]
        _, b, _, r, fix = self._floor_parts(e)
        return self.b.add(r, self.b.select(fix, b, _splat(b.type, 0)))

    def _cmp(self, op: str, a: ir.Value, b: ir.Value, dtype: str) -> ir.Value:
        if dt.is_float(dtype):  # as in C: only != holds when an operand is NaN
            if op == "!=":
                return self.b.fcmp_unordered(op, a, b)
            return self.b.fcmp_ordered(op, a, b)
        if dt.is_uint(dtype) or dt.is_bool(dtype):
            return self.b.icmp_unsigned(op, a, b)
        return self.b.icmp_signed(op, a, b)

    def expr_Min(self, e: E.Min) -> ir.Value:
        a, b = self.expr(e.a), self.expr(e.b)
        return self.b.select(self._cmp("<", a, b, e.a.dtype), a, b)

    def expr_Max(self, e: E.Max) -> ir.Value:
        a, b = self.expr(e.a), self.expr(e.b)
        return self.b.select(self._cmp(">", a, b, e.a.dtype), a, b)

    def _compare(self, e: E.CmpOp) -> ir.Value:
        return self._cmp(e.op, self.expr(e.a), self.expr(e.b), e.a.dtype)

    expr_EQ = expr_NE = expr_LT = expr_LE = expr_GT = expr_GE = _compare

    def expr_And(self, e: E.And) -> ir.Value:
        return self.b.and_(self.expr(e.a), self.expr(e.b))

    def expr_Or(self, e: E.Or) -> ir.Value:
        return self.b.or_(self.expr(e.a), self.expr(e.b))

    def expr_Not(self, e: E.Not) -> ir.Value:
        return self.b.not_(self.expr(e.a))

    def expr_Select(self, e: E.Select) -> ir.Value:
        return self.b.select(self.expr(e.cond), self.expr(e.t), self.expr(e.f))

    def expr_Cast(self, e: E.Cast) -> ir.Value:
        return self.convert(self.expr(e.value), e.value.dtype, e.dtype)

    def convert(self, v: ir.Value, src: str, dst: str) -> ir.Value:
        s, d = dt.parse(src), dt.parse(dst)
        to = llvm_type(dst)
        b = self.b
        if s.code == "bool" and d.code != "bool":
            return b.uitofp(v, to) if d.code == "float" else b.zext(v, to)
        if d.code == "bool":
            zero = ir.Constant(v.type, None)
            return (
                b.fcmp_unordered("!=", v, zero)
                if s.code == "float"
                else b.icmp_unsigned("!=", v, zero)
            )
        if s.code == "float" and d.code == "float":
            if s.bits == d.bits:
                return v
            if {s.bits, d.bits} == {16, 64}:  # via float32: no libcall (__truncdfhf2) needed
                mid = dt.with_lanes("float32", s.lanes)
                return self.convert(self.convert(v, src, mid), mid, dst)
            return b.fpext(v, to) if d.bits > s.bits else b.fptrunc(v, to)
        if s.code == "float":
            return b.fptoui(v, to) if d.code == "uint" else b.fptosi(v, to)
        if d.code == "float":
            return b.uitofp(v, to) if s.code == "uint" else b.sitofp(v, to)
        if s.bits == d.bits:
            return v
        if d.bits < s.bits:
            return b.trunc(v, to)
        return b.zext(v, to) if s.code == "uint" else b.sext(v, to)

    def expr_Ramp(self, e: E.Ramp) -> ir.Value:
        ty = llvm_type(e.dtype)
        if isinstance(e.base, E.IntImm) and isinstance(e.stride, E.IntImm):
            return ir.Constant(ty, [e.base.value + k * e.stride.value for k in range(e.lanes)])
        base = self._splat(self.expr(e.base), e.lanes)
        stride = self._splat(self.expr(e.stride), e.lanes)
        iota = ir.Constant(ty, list(range(e.lanes)))
        return self.b.add(base, self.b.mul(stride, iota))

    def _splat(self, v: ir.Value, lanes: int) -> ir.Value:
        vty = ir.VectorType(v.type, lanes)
        one = self.b.insert_element(ir.Constant(vty, ir.Undefined), v, ir.Constant(I32, 0))
        return self.b.shuffle_vector(
            one, ir.Constant(vty, ir.Undefined), ir.Constant(ir.VectorType(I32, lanes), [0] * lanes)
        )

    def expr_Broadcast(self, e: E.Broadcast) -> ir.Value:
        return self._splat(self.expr(e.value), e.lanes)

    def _address(self, buf: S.Buffer, index: E.Expr, dtype: str):
        """(pointer, None) for a scalar or contiguous access, else (None, per-lane pointers)."""
        base = self.expr_Var(buf.data)
        ety = mem_type(buf.dtype)
        dependent = _data_dependent(index)
        check = self.bounds_check and dependent and _const_extent(buf)
        if isinstance(index, E.Ramp) and E.is_const(index.stride, 1):
            i = self._index(index.base, nsw=not dependent)
            i = self._checked_index(buf, i, index.lanes) if check else i
            return self.b.gep(base, [i], source_etype=ety), None
        if dt.lanes(index.dtype) == 1:
            i = self._index(index, nsw=not dependent)
            i = self._checked_index(buf, i) if check else i
            return self.b.gep(base, [i], source_etype=ety), None
        idx = self.expr(index)
        ptrs = []
        for k in range(dt.lanes(index.dtype)):
            i = self.b.extract_element(idx, ir.Constant(I32, k))
            i = self.b.sext(i, I64) if i.type.width < 64 else i
            i = self._checked_index(buf, i) if check else i
            ptrs.append(self.b.gep(base, [i], source_etype=ety))
        return None, ptrs

    def _align(self, buf: S.Buffer, index: E.Expr) -> int:
        """The alignment promised for an access (bytes): one element's on the CPU."""
        return dt.itemsize(buf.dtype)

    def _index(self, index: E.Expr, nsw: bool = False) -> ir.Value:
        """An index as i64. With `nsw` (an address's index that reads no memory: of loop
        variables and constants, it stays within its buffer) its signed adds, subtracts and
        multiplies are marked no-signed-wrap, which lets LLVM widen each term into the address
        (sext(a + b) = sext(a) + sext(b)); unmarked, an index built on a parallel task's
        variable was summed in i32 and sign-extended at every access of the inner loop."""
        saved, self._int_flags = self._int_flags, ("nsw",) if nsw else ()
        try:
            idx = self.expr(index)
        finally:
            self._int_flags = saved
        return self.b.sext(idx, I64) if idx.type.width < 64 else idx

    def expr_BufferLoad(self, e: E.BufferLoad) -> ir.Value:
        if len(e.indices) != 1:
            raise CodegenError(f"llvm codegen: load of '{e.buffer.name}' is not flattened")
        align = dt.itemsize(e.buffer.dtype)
        ptr, lanes = self._address(e.buffer, e.indices[0], e.dtype)
        if lanes is None:
            v = self.b.load(ptr, typ=mem_type(e.dtype), align=self._align(e.buffer, e.indices[0]))
        else:
            v = ir.Constant(mem_type(e.dtype), ir.Undefined)
            for k, p in enumerate(lanes):
                x = self.b.load(p, typ=mem_type(e.buffer.dtype), align=align)
                v = self.b.insert_element(v, x, ir.Constant(I32, k))
        return self.b.trunc(v, llvm_type(e.dtype)) if dt.is_bool(e.dtype) else v

    def expr_Call(self, e: E.Call) -> ir.Value:
        if e.op == "tir.if_then_else":
            return self._if_then_else(e)
        if e.op == "tir.address_of":
            load = e.args[0]
            ptr, _ = self._address(load.buffer, load.indices[0], load.dtype)
            return ptr
        if e.extern:
            args = [self.expr(a) for a in e.args]
            ret = ir.VoidType() if e.dtype == "void" else llvm_type(e.dtype)
            return self.b.call(self._decl(e.op, ret, [a.type for a in args]), args)
        if e.op in _INTRINSIC_MATH or e.op in _LIBM or e.op in ("fast_erf", "fast_exp"):
            return self._math(e)
        raise CodegenError(f"llvm codegen: unknown intrinsic '{e.op}'")

    def _math(self, e: E.Call) -> ir.Value:
        args = [self.expr(a) for a in e.args]
        t = dt.parse(e.dtype)
        if t.bits == 16:  # compute half precision in float32
            wide = dt.with_lanes("float32", t.lanes)
            args = [self.convert(a, e.dtype, wide) for a in args]
            r = self._math_call(e.op, args, wide)
            return self.convert(r, wide, e.dtype)
        return self._math_call(e.op, args, e.dtype)

    def _math_call(self, op: str, args: list[ir.Value], dtype: str) -> ir.Value:
        ty = llvm_type(dtype)
        if op == "fast_erf":
            if dt.parse(dtype).bits == 32:
                return self._erf32(args[0], ty)
            op = "erf"
        if op == "fast_exp":
            if dt.parse(dtype).bits == 32:
                return self._exp32(args[0], ty)
            op = "exp"
        if op in _INTRINSIC_MATH:
            return self.b.call(self._intrinsic(f"llvm.{op}", ty, len(args)), args)
        sty = llvm_type(dt.element_of(dtype))
        name = op + ("f" if dt.parse(dtype).bits == 32 else "")
        f = self._decl(name, sty, [sty] * len(args))
        if dt.lanes(dtype) == 1:
            return self.b.call(f, args)
        out = ir.Constant(ty, ir.Undefined)
        for k in range(dt.lanes(dtype)):
            lane = [self.b.extract_element(a, ir.Constant(I32, k)) for a in args]
            out = self.b.insert_element(out, self.b.call(f, lane), ir.Constant(I32, k))
        return out

    def _erf32(self, x: ir.Value, ty: ir.Type) -> ir.Value:
        """float32 `fast_erf` by arithmetic, so a vectorized loop stays vectorized (libm's erff
        is a scalar call per lane): `_ERF_P` over `_ERF_Q` on x clamped to +-`_ERF_CLAMP`;
        within 5e-7 of erf, NaN to NaN, +-inf to +-1."""
        b = self.b
        fma = self._intrinsic("llvm.fmuladd", ty, 3)  # fused where the target has FMA

        def c(v: float) -> ir.Constant:
            return _splat(ty, v)

        def poly(t: ir.Value, coefficients: tuple[float, ...]) -> ir.Value:
            p = c(coefficients[0])
            for k in coefficients[1:]:
                p = b.call(fma, [p, t, c(k)])
            return p

        a = b.select(b.fcmp_ordered("<", x, c(-_ERF_CLAMP)), c(-_ERF_CLAMP), x)
        a = b.select(b.fcmp_ordered(">", a, c(_ERF_CLAMP)), c(_ERF_CLAMP), a)
        t = b.fmul(a, a)
        return b.fdiv(b.fmul(a, poly(t, _ERF_P)), poly(t, _ERF_Q))

    def _exp32(self, x: ir.Value, ty: ir.Type) -> ir.Value:
        """float32 `fast_exp` by arithmetic (`_EXP_POLY`'s range reduction), so a vectorized
        loop stays vectorized: 2^n by adding n to the exponent bits of exp(r) in [0.7, 1.42];
        within 2 ulp of exp, 0 below `_EXP_RANGE`, inf above, NaN to NaN."""
        b = self.b
        fma = self._intrinsic("llvm.fmuladd", ty, 3)

        def c(v: float) -> ir.Constant:
            return _splat(ty, v)

        lo, hi = _EXP_RANGE
        a = b.select(b.fcmp_ordered("<", x, c(lo)), c(lo), x)
        a = b.select(b.fcmp_ordered(">", a, c(hi)), c(hi), a)
        n = b.call(self._intrinsic("llvm.rint", ty, 1), [b.fmul(a, c(1 / math.log(2)))])
        r = b.call(fma, [n, c(-_EXP_LN2[1]), b.call(fma, [n, c(-_EXP_LN2[0]), a])])
        p = c(_EXP_POLY[-1])
        for k in _EXP_POLY[-2::-1]:
            p = b.call(fma, [p, r, c(k)])
        p = b.fadd(b.call(fma, [b.fmul(p, r), r, r]), c(1.0))
        ity = ir.VectorType(I32, ty.count) if isinstance(ty, ir.VectorType) else I32
        shift = b.shl(b.fptosi(n, ity), _splat(ity, 23))
        y = b.bitcast(b.add(b.bitcast(p, ity), shift), ty)
        y = b.select(b.fcmp_ordered("<", x, c(lo)), c(0.0), y)
        y = b.select(b.fcmp_ordered(">", x, c(hi)), c(math.inf), y)
        return b.select(b.fcmp_unordered("uno", x, x), x, y)

    def _if_then_else(self, e: E.Call) -> ir.Value:
        cond = self.expr(e.args[0])
        if dt.lanes(e.args[0].dtype) > 1:
            raise CodegenError("llvm codegen: if_then_else with a vector condition")
        b = self.b
        then_bb = b.append_basic_block(self._name("ite.then"))
        else_bb = b.append_basic_block(self._name("ite.else"))
        done = b.append_basic_block(self._name("ite.end"))
        b.cbranch(cond, then_bb, else_bb)
        b.position_at_end(then_bb)
        t = self.expr(e.args[1])
        t_end = b.block
        b.branch(done)
        b.position_at_end(else_bb)
        f = self.expr(e.args[2])
        f_end = b.block
        b.branch(done)
        b.position_at_end(done)
        phi = b.phi(t.type)
        phi.add_incoming(t, t_end)
        phi.add_incoming(f, f_end)
        return phi


def codegen(
    funcs: list[S.PrimFunc], name: str = "module", triple: str = "", bounds_check: bool = True
) -> ir.Module:
    """An llvmlite module holding every function (`checked`: the bounds-checked buffers of each
    function, see CodeGenLLVM)."""
    cg = CodeGenLLVM(name, triple, bounds_check)
    for f in funcs:
        cg.add_function(f)
    cg.module.checked = cg.checked
    return cg.module


def _data_dependent(index: E.Expr) -> bool:
    """The index reads memory (a gather or scatter through loaded values)."""
    return contains(index, lambda n: isinstance(n, E.BufferLoad))


def _const_extent(buf: S.Buffer) -> bool:
    return all(isinstance(s, E.IntImm) for s in buf.shape)


def _splat(ty: ir.Type, value: float) -> ir.Constant:
    """The constant `value` of type `ty`, in every lane of a vector type."""
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [ir.Constant(ty.element, value)] * ty.count)
    return ir.Constant(ty, value)
