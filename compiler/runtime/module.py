"""Native modules: JIT-compiled functions callable on numpy arrays; object and library export.

The function ABI is one pointer per buffer parameter. Calls check every array's shape, dtype,
C-contiguity and (for the buffers the function writes) writability against the signature first,
because the native code trusts them blindly.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import math
import os
import subprocess
import tempfile
import threading
from functools import cached_property
from typing import Any

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from ..codegen import parallel
from ..codegen.abi import OOB_PREFIX, address
from ..codegen.llvm import codegen
from ..codegen.target import Target, optimize, parse_ir, target_machine
from ..errors import ArgumentError, CodegenError, OperatorError, OutOfBoundsError
from ..tir import dtype as dt
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.functor import post_order_visit

SIGNATURE_PREFIX = "__vta_signature_"


def set_num_threads(n: int) -> None:
    """Threads the parallel loops of every module use (the caller included)."""
    parallel.set_num_threads(n)


def written_buffers(f: S.PrimFunc) -> set[str]:
    """Names of the data variables the function may write: stored to, or whose address it
    passes on (an extern call may write through it)."""
    found: set[str] = set()

    def visit(n) -> None:
        if isinstance(n, S.BufferStore):
            found.add(n.buffer.data.name)
        elif isinstance(n, E.Call) and n.op == "tir.address_of":
            found.add(n.args[0].buffer.data.name)

    post_order_visit(f.body, visit)
    return found


def _signature(f: S.PrimFunc) -> list[dict]:
    written = written_buffers(f)
    return [
        {
            "name": b.name,
            "shape": [int(s.value) for s in b.shape],
            "dtype": b.dtype,
            "written": b.data.name in written,
        }
        for b in f.params
    ]


class _Callable:
    """Argument checking and the ctypes call, shared by JIT and loaded modules."""

    name: str
    signature: list[dict]
    checked: list[str]  # buffers whose data-dependent accesses are bounds-checked
    _cfunc: Any

    def __call__(self, *arrays: np.ndarray) -> None:
        expect = self._expected
        if len(arrays) != len(expect) or not all(
            type(a) is np.ndarray
            and a.dtype == d
            and a.shape == shape
            and a.flags.c_contiguous
            and (a.flags.writeable or not w)
            for a, (d, shape, w) in zip(arrays, expect, strict=False)
        ):
            self._check(arrays)  # the slow path names what is wrong (or accepts a subclass)
        self._cfunc(*[address(a) for a in arrays])
        if self.checked:
            self._raise_out_of_bounds()

    def _oob_record(self) -> Any:
        raise NotImplementedError

    def _raise_out_of_bounds(self) -> None:
        record = self._oob_record()
        which, index = record[0], record[1]
        if which:
            record[0] = record[1] = 0
            buf = self.checked[which - 1]
            shapes = {p["name"]: p["shape"] for p in self.signature}
            size = f" (extent {math.prod(shapes[buf])})" if buf in shapes else ""
            raise OutOfBoundsError(
                f"{self.name}: data-dependent index {index} into '{buf}'{size} is out of range; "
                "the access read or wrote element 0 instead (outputs are not valid)"
            )

    @cached_property
    def _expected(self) -> list[tuple[np.dtype, tuple[int, ...], bool]]:
        # libraries written before the signature recorded writes: every buffer may be written
        return [
            (np.dtype(dt.to_numpy(p["dtype"])), tuple(p["shape"]), p.get("written", True))
            for p in self.signature
        ]

    def _check(self, arrays: tuple[np.ndarray, ...]) -> None:
        sig = self.signature
        if len(arrays) != len(sig):
            names = ", ".join(p["name"] for p in sig)
            raise ArgumentError(f"{self.name} takes {len(sig)} arrays ({names}), got {len(arrays)}")
        for a, p in zip(arrays, sig, strict=False):
            where = f"{self.name}: argument '{p['name']}'"
            if not isinstance(a, np.ndarray):
                raise ArgumentError(f"{where} must be a numpy array, got {type(a).__name__}")
            if a.dtype != dt.to_numpy(p["dtype"]):
                raise ArgumentError(f"{where} has dtype {a.dtype}, expected {p['dtype']}")
            if list(a.shape) != p["shape"]:
                raise ArgumentError(f"{where} has shape {list(a.shape)}, expected {p['shape']}")
            if not a.flags.c_contiguous:
                raise ArgumentError(f"{where} must be C-contiguous (use np.ascontiguousarray)")
            if p.get("written", True) and not a.flags.writeable:
                raise ArgumentError(
                    f"{where} is read-only but the function writes it (pass a writable copy)"
                )


class Module(_Callable):
    """A built function: call it on numpy arrays, read its IR/assembly, save or export it."""

    def __init__(
        self, func: S.PrimFunc, target: Target, imports: list[str], bounds_check: bool = True
    ):
        self.name, self.target, self.func = func.name, target, func
        self.signature = _signature(func)
        irmod = codegen([func], func.name, target.triple, bounds_check)
        self.checked = irmod.checked.get(func.name, [])
        _embed_signature(irmod, func.name, self.signature, self.checked)
        self.llvm_ir_unoptimized = str(irmod)
        tm = target_machine(target, pic=False)
        mod = parse_ir(self.llvm_ir_unoptimized, tm, target.triple)
        for text in imports:
            mod.link_in(parse_ir(text, tm, target.triple))
        optimize(mod, tm)
        self._mod, self._engine, self._cfunc_cached = mod, None, None
        self._jit_lock = threading.Lock()
        self.uses_parallel = parallel.SYMBOL in self.llvm_ir_unoptimized

    def get_source(self, fmt: str = "ll") -> str:
        """Optimized LLVM IR ("ll"), unoptimized IR ("ll-raw") or assembly ("asm")."""
        if fmt == "ll":
            return str(self._mod)
        if fmt == "ll-raw":
            return self.llvm_ir_unoptimized
        if fmt == "asm":
            return target_machine(self.target, pic=True).emit_assembly(self._mod)
        raise OperatorError(f"unknown format {fmt!r}: ll, ll-raw or asm")

    @property
    def _cfunc(self):
        if self._cfunc_cached is None:
            with self._jit_lock:  # one engine even when threads make the first call together
                if self._cfunc_cached is None:
                    self._jit()
        return self._cfunc_cached

    def _jit(self) -> None:
        if not self.target.is_host:
            raise CodegenError(
                f"module '{self.name}' is compiled for {self.target.triple}; it cannot run on "
                "this host (save() it and run it on the target)"
            )
        if self.uses_parallel:
            parallel.load_runtime()
        tm = target_machine(self.target, pic=False)
        engine = llvm.create_mcjit_compiler(llvm.parse_bitcode(self._mod.as_bitcode()), tm)
        engine.finalize_object()
        addr = engine.get_function_address(self.name)
        proto = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * len(self.signature))
        self._engine, self._cfunc_cached = engine, proto(addr)

    def _oob_record(self) -> Any:
        self._cfunc  # noqa: B018 - compiles the engine first
        addr = self._engine.get_global_value_address(OOB_PREFIX + self.name)
        return (ctypes.c_int64 * 2).from_address(addr)

    def save(self, path: str) -> None:
        """Write a relocatable object file (.o) for the module's target."""
        obj = target_machine(self.target, pic=True).emit_object(self._mod)
        with open(path, "wb") as f:
            f.write(obj)

    def export_library(self, path: str) -> None:
        """Link a shared library with the system linker (host target only)."""
        if not self.target.is_host:
            raise CodegenError("export_library links for the host; use save() for cross targets")
        with tempfile.TemporaryDirectory() as tmp:
            obj = os.path.join(tmp, "module.o")
            self.save(obj)
            # the parallel runtime's symbol stays undefined: load_module loads it globally first
            r = subprocess.run(["ld", "-shared", "-o", path, obj], capture_output=True, text=True)
            if r.returncode:
                raise CodegenError(f"linking {path} failed: {r.stderr.strip()}")


def _embed_signature(
    irmod: ir.Module, name: str, signature: list[dict], checked: list[str]
) -> None:
    meta = {"name": name, "params": signature, "checked": checked}
    data = bytearray(json.dumps(meta).encode() + b"\0")
    ty = ir.ArrayType(ir.IntType(8), len(data))
    g = ir.GlobalVariable(irmod, ty, SIGNATURE_PREFIX + name)
    g.initializer = ir.Constant(ty, data)
    g.global_constant = True


class LoadedModule(_Callable):
    """A function from a shared library written by Module.export_library."""

    def __init__(self, path: str, name: str):
        parallel.load_runtime()
        self.lib = ctypes.CDLL(os.path.abspath(path))
        try:
            first = ctypes.c_char.in_dll(self.lib, SIGNATURE_PREFIX + name)
        except ValueError as e:
            raise CodegenError(f"{path}: no function '{name}' exported by this toolkit") from e
        meta = json.loads(ctypes.cast(ctypes.addressof(first), ctypes.c_char_p).value)
        self.name, self.signature = name, meta["params"]
        self.checked = meta.get("checked", [])
        self._cfunc = getattr(self.lib, name)
        self._cfunc.restype = None
        self._cfunc.argtypes = [ctypes.c_void_p] * len(self.signature)

    def _oob_record(self) -> Any:
        return (ctypes.c_int64 * 2).in_dll(self.lib, OOB_PREFIX + self.name)


def load_module(path: str, name: str = "main") -> LoadedModule:
    """Load function `name` from a shared library exported by Module.export_library."""
    if not os.path.exists(path):
        raise CodegenError(f"no such library: {path}")
    return LoadedModule(path, name)


def build_module(
    func: S.PrimFunc, target: str, imports: list[str], bounds_check: bool = True
) -> Module:
    return Module(func, Target.parse(target), imports, bounds_check)
