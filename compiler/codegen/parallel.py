"""The thread pool that runs generated parallel loops (`vta_parallel_for`).

Written in LLVM IR, compiled once per host into a small shared library (cached under
`$VTA_CACHE_DIR/parallel`, default `~/.cache/vta-codesign/parallel`) and loaded globally, so
JIT-compiled and exported modules resolve `vta_parallel_for` against it.

A parallel loop of n iterations is cut into chunks; the calling thread and the workers claim
chunks with a compare-and-swap on one word (job generation, chunk count, next chunk), and the
call returns when every chunk has run: not when every worker has checked in. A worker that
another process keeps off its core past the start of a loop takes no chunk and delays nobody
(with an OpenMP team, the join barrier waits for it); the caller and the running workers take
its share. Only a worker descheduled in the middle of a chunk delays the loop, by that chunk.
A worker spins for the next loop for WORKER_SPIN_NS (`set_worker_spin_us`, or
VTA_WORKER_SPIN_US at load), so that an inference's next kernel after a serial step, and the
next inference, find it awake rather than paying a futex wake-up; the waiting caller spins for
CALLER_SPIN_NS. Past YIELD_AFTER_NS a spinning thread yields its core between checks, so on a
machine with more runnable threads than cores it hands the core to our caller or to another
process (without yielding, a 1 ms spin made MobileNet-v1 37% slower beside a spinning process:
21.9 -> 30.0 ms).
Then they sleep on a futex, so an idle pool leaves the cores to other processes. A call made
while the pool is busy (another Python thread's loop) runs serially on its own thread.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import tempfile
from functools import cache
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from ..errors import CodegenError
from .abi import arch_family, default_threads
from .target import Target, long_bits, parse_ir, target_machine

SYMBOL = "vta_parallel_for"  # void (ptr fn, ptr ctx, i64 n, i64 chunk); fn(ctx, begin, end)
CHUNKS_PER_THREAD = 4  # chunk 0: n / (4 x threads); every claim moves the claim word between cores
WORKER_SPIN_NS = 1_000_000  # a worker's spin for the next loop before it sleeps (default)
CALLER_SPIN_NS = 200_000  # the caller's spin for chunks other threads still run
YIELD_AFTER_NS = 50_000  # spinning longer than this yields the core between checks
MAX_CHUNKS = (1 << 20) - 1  # the claim word holds 20-bit chunk counts

_FUTEX = {"x86_64": 202, "aarch64": 98, "arm": 240}  # SYS_futex
_PAUSE = {
    "x86_64": ("declare void @llvm.x86.sse2.pause()", "call void @llvm.x86.sse2.pause()"),
    "aarch64": ("declare void @llvm.aarch64.hint(i32)", "call void @llvm.aarch64.hint(i32 1)"),
    "arm": ("declare void @llvm.arm.hint(i32)", "call void @llvm.arm.hint(i32 1)"),
}

_IR = """
@vp.fn = internal global ptr null, align 64
@vp.ctx = internal global ptr null
@vp.n = internal global i64 0
@vp.chunk = internal global i64 1
@vp.claim = internal global i64 0, align 64
@vp.done = internal global i32 0, align 64
@vp.caller_sleeps = internal global i32 0
@vp.gen = internal global i32 0, align 64
@vp.sleepers = internal global i32 0
@vp.busy = internal global i32 0, align 64
@vp.nthreads = internal global i32 1
@vp.started = internal global i32 0
@vp.active = internal global i32 0
@vp.worker_spin = internal global i64 {worker_spin}

declare {long} @syscall({long}, ...)
declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i32 @pthread_atfork(ptr, ptr, ptr)
declare i32 @clock_gettime(i32, ptr)
declare i32 @sched_yield()
{pause_decl}

define internal i64 @vp.now() {{
  %ts = alloca [2 x {long}], align 8
  call i32 @clock_gettime(i32 1, ptr %ts)
  %sl = load {long}, ptr %ts
  %s = {from_long} {long} %sl to i64
  %p = getelementptr [2 x {long}], ptr %ts, i64 0, i64 1
  %nsl = load {long}, ptr %p
  %ns = {from_long} {long} %nsl to i64
  %t = mul i64 %s, 1000000000
  %r = add i64 %t, %ns
  ret i64 %r
}}

define internal void @vp.futex_wait(ptr %addr, i32 %val) {{
  %v = {to_long} i32 %val to {long}
  call {long} ({long}, ...) @syscall({long} {futex}, ptr %addr, {long} 128, {long} %v, ptr null,
                                    ptr null, {long} 0)
  ret void
}}

define internal void @vp.futex_wake(ptr %addr, i32 %count) {{
  %c = {to_long} i32 %count to {long}
  call {long} ({long}, ...) @syscall({long} {futex}, ptr %addr, {long} 129, {long} %c, ptr null,
                                    ptr null, {long} 0)
  ret void
}}

; spin until (*addr == val) == eq, at most ns nanoseconds; true if it happened. Past the first
; {yield_after} ns it yields the core between checks, to a thread of ours or another process
define internal i1 @vp.spin(ptr %addr, i32 %val, i1 %eq, i64 %ns) {{
entry:
  %t0 = call i64 @vp.now()
  %deadline = add i64 %t0, %ns
  br label %loop
loop:
  %i = phi i32 [0, %entry], [%i1, %pause], [%i1, %polite], [%i1, %yield]
  %v = load atomic i32, ptr %addr acquire, align 4
  %is = icmp eq i32 %v, %val
  %hit = icmp eq i1 %is, %eq
  br i1 %hit, label %yes, label %pause
pause:
  {pause_call}
  %i1 = add i32 %i, 1
  %m = and i32 %i1, 15
  %check = icmp eq i32 %m, 0
  br i1 %check, label %time, label %loop
time:
  %t = call i64 @vp.now()
  %late = icmp sge i64 %t, %deadline
  br i1 %late, label %no, label %polite
polite:
  %spun = sub i64 %t, %t0
  %long = icmp sge i64 %spun, {yield_after}
  br i1 %long, label %yield, label %loop
yield:
  call i32 @sched_yield()
  br label %loop
yes:
  ret i1 1
no:
  ret i1 0
}}

; claim and run chunks of job g (24-bit generation) until none is left; then count them done
define internal void @vp.run(i64 %g) {{
entry:
  br label %loop
loop:
  %ran = phi i32 [0, %entry], [%ran, %claim], [%ran1, %work]
  %old = load atomic i64, ptr @vp.claim seq_cst, align 8
  %og = lshr i64 %old, 40
  %same = icmp eq i64 %og, %g
  br i1 %same, label %check, label %out
check:
  %idx = and i64 %old, 1048575
  %nch.s = lshr i64 %old, 20
  %nch = and i64 %nch.s, 1048575
  %more = icmp ult i64 %idx, %nch
  br i1 %more, label %claim, label %finish
claim:
  %new = add i64 %old, 1
  %res = cmpxchg ptr @vp.claim, i64 %old, i64 %new seq_cst seq_cst
  %ok = extractvalue {{ i64, i1 }} %res, 1
  br i1 %ok, label %work, label %loop
work:
  %fn = load ptr, ptr @vp.fn
  %ctx = load ptr, ptr @vp.ctx
  %n = load i64, ptr @vp.n
  %chunk = load i64, ptr @vp.chunk
  %b = mul i64 %idx, %chunk
  %e0 = add i64 %b, %chunk
  %lt = icmp slt i64 %e0, %n
  %e = select i1 %lt, i64 %e0, i64 %n
  call void %fn(ptr %ctx, i64 %b, i64 %e)
  %ran1 = add i32 %ran, 1
  br label %loop
finish:
  %any = icmp ne i32 %ran, 0
  br i1 %any, label %count, label %out
count:
  %d0 = atomicrmw add ptr @vp.done, i32 %ran seq_cst
  %d1 = add i32 %d0, %ran
  %d = zext i32 %d1 to i64
  %last = icmp eq i64 %d, %nch
  br i1 %last, label %wake, label %out
wake:
  %sl = load atomic i32, ptr @vp.caller_sleeps seq_cst, align 4
  %asleep = icmp ne i32 %sl, 0
  br i1 %asleep, label %dowake, label %out
dowake:
  call void @vp.futex_wake(ptr @vp.done, i32 1)
  br label %out
out:
  ret void
}}

; arg: generation << 32 | worker index. A 32-bit pointer keeps the index alone: the new worker
; then starts from generation 0 and looks at the current job at once (harmless: vp.run claims
; only that job's unclaimed chunks)
define internal ptr @vp.worker(ptr %arg) {{
entry:
  %a = ptrtoint ptr %arg to i64
  %k64 = and i64 %a, 4294967295
  %k = trunc i64 %k64 to i32
  %g64 = lshr i64 %a, 32
  %g0 = trunc i64 %g64 to i32
  br label %loop
loop:
  %my = phi i32 [%g0, %entry], [%cur, %got], [%cur, %run]
  %wspin = load atomic i64, ptr @vp.worker_spin monotonic, align 8
  %hit = call i1 @vp.spin(ptr @vp.gen, i32 %my, i1 0, i64 %wspin)
  br i1 %hit, label %got, label %sleep
sleep:
  atomicrmw add ptr @vp.sleepers, i32 1 seq_cst
  br label %recheck
recheck:
  %v = load atomic i32, ptr @vp.gen seq_cst, align 4
  %still = icmp eq i32 %v, %my
  br i1 %still, label %wait, label %woke
wait:
  call void @vp.futex_wait(ptr @vp.gen, i32 %my)
  br label %recheck
woke:
  atomicrmw sub ptr @vp.sleepers, i32 1 seq_cst
  br label %got
got:
  %cur = load atomic i32, ptr @vp.gen seq_cst, align 4
  %act = load atomic i32, ptr @vp.active monotonic, align 4
  %part = icmp ult i32 %k, %act
  br i1 %part, label %run, label %loop
run:
  %c64 = zext i32 %cur to i64
  %cg = and i64 %c64, 16777215
  call void @vp.run(i64 %cg)
  br label %loop
}}

; start workers up to `want`; returns how many exist
define internal i32 @vp.ensure(i32 %want) {{
entry:
  %tid = alloca i64, align 8
  br label %loop
loop:
  %s = load i32, ptr @vp.started
  %need = icmp slt i32 %s, %want
  br i1 %need, label %spawn, label %out
spawn:
  %g = load atomic i32, ptr @vp.gen seq_cst, align 4
  %g64 = zext i32 %g to i64
  %gs = shl i64 %g64, 32
  %s64 = zext i32 %s to i64
  %a = or i64 %gs, %s64
  %arg = inttoptr i64 %a to ptr
  %r = call i32 @pthread_create(ptr %tid, ptr null, ptr @vp.worker, ptr %arg)
  %ok = icmp eq i32 %r, 0
  br i1 %ok, label %next, label %out
next:
  %s1 = add i32 %s, 1
  store i32 %s1, ptr @vp.started
  br label %loop
out:
  %have = load i32, ptr @vp.started
  %fewer = icmp slt i32 %have, %want
  %n = select i1 %fewer, i32 %have, i32 %want
  ret i32 %n
}}

define internal void @vp.wait_done(i64 %nch) {{
entry:
  %n = trunc i64 %nch to i32
  %hit = call i1 @vp.spin(ptr @vp.done, i32 %n, i1 1, i64 {caller_spin})
  br i1 %hit, label %out, label %sleep
sleep:
  store atomic i32 1, ptr @vp.caller_sleeps seq_cst, align 4
  br label %loop
loop:
  %d = load atomic i32, ptr @vp.done seq_cst, align 4
  %all = icmp eq i32 %d, %n
  br i1 %all, label %woke, label %wait
wait:
  call void @vp.futex_wait(ptr @vp.done, i32 %d)
  br label %loop
woke:
  store atomic i32 0, ptr @vp.caller_sleeps seq_cst, align 4
  br label %out
out:
  ret void
}}

define void @{symbol}(ptr %fn, ptr %ctx, i64 %n, i64 %chunk0) {{
entry:
  %pos = icmp sgt i64 %n, 0
  br i1 %pos, label %size, label %out
size:
  %nt = load atomic i32, ptr @vp.nthreads monotonic, align 4
  %nt64 = zext i32 %nt to i64
  %auto.k = mul i64 %nt64, {chunks_per_thread}
  %auto.a = add i64 %n, %auto.k
  %auto.b = sub i64 %auto.a, 1
  %auto = udiv i64 %auto.b, %auto.k
  %cpos = icmp sgt i64 %chunk0, 0
  %c1 = select i1 %cpos, i64 %chunk0, i64 %auto
  %minc.a = add i64 %n, {max_chunks_m1}
  %minc = udiv i64 %minc.a, {max_chunks}
  %cbig = icmp ult i64 %c1, %minc
  %chunk = select i1 %cbig, i64 %minc, i64 %c1
  %nch.a = add i64 %n, %chunk
  %nch.b = sub i64 %nch.a, 1
  %nch = udiv i64 %nch.b, %chunk
  %many = icmp sgt i32 %nt, 1
  %split = icmp ugt i64 %nch, 1
  %par = and i1 %many, %split
  br i1 %par, label %try, label %serial
try:
  %lock = cmpxchg ptr @vp.busy, i32 0, i32 1 acquire monotonic
  %locked = extractvalue {{ i32, i1 }} %lock, 1
  br i1 %locked, label %start, label %serial
serial:
  call void %fn(ptr %ctx, i64 0, i64 %n)
  br label %out
start:
  %want = sub i32 %nt, 1
  %workers = call i32 @vp.ensure(i32 %want)
  store ptr %fn, ptr @vp.fn
  store ptr %ctx, ptr @vp.ctx
  store i64 %n, ptr @vp.n
  store i64 %chunk, ptr @vp.chunk
  store atomic i32 0, ptr @vp.done seq_cst, align 4
  store atomic i32 %workers, ptr @vp.active seq_cst, align 4
  %g = load atomic i32, ptr @vp.gen seq_cst, align 4
  %g1 = add i32 %g, 1
  %g64 = zext i32 %g1 to i64
  %gm = and i64 %g64, 16777215
  %gs = shl i64 %gm, 40
  %ns = shl i64 %nch, 20
  %word = or i64 %gs, %ns
  store atomic i64 %word, ptr @vp.claim seq_cst, align 8
  store atomic i32 %g1, ptr @vp.gen seq_cst, align 4
  %sl = load atomic i32, ptr @vp.sleepers seq_cst, align 4
  %anyasleep = icmp sgt i32 %sl, 0
  br i1 %anyasleep, label %wake, label %work
wake:
  call void @vp.futex_wake(ptr @vp.gen, i32 2147483647)
  br label %work
work:
  call void @vp.run(i64 %gm)
  call void @vp.wait_done(i64 %nch)
  store atomic i32 0, ptr @vp.busy release, align 4
  br label %out
out:
  ret void
}}

define internal void @vp.atfork_child() {{
  store i32 0, ptr @vp.started
  store i32 0, ptr @vp.busy
  store i32 0, ptr @vp.sleepers
  store i32 0, ptr @vp.caller_sleeps
  ret void
}}

define void @vta_runtime_init() {{
  call i32 @pthread_atfork(ptr null, ptr null, ptr @vp.atfork_child)
  ret void
}}

define void @vta_set_num_threads(i32 %n) {{
  %pos = icmp sgt i32 %n, 1
  %v = select i1 %pos, i32 %n, i32 1
  store atomic i32 %v, ptr @vp.nthreads monotonic, align 4
  ret void
}}

define void @vta_set_worker_spin_ns(i64 %ns) {{
  store atomic i64 %ns, ptr @vp.worker_spin monotonic, align 8
  ret void
}}

define i32 @vta_get_num_threads() {{
  %v = load atomic i32, ptr @vp.nthreads monotonic, align 4
  ret i32 %v
}}
"""


def runtime_ir(triple: str) -> str:
    """The runtime's LLVM IR for `triple` (x86-64, AArch64 or 32-bit Arm Linux)."""
    arch = arch_family(triple)
    if arch not in _FUTEX:
        raise CodegenError(
            f"the parallel runtime supports x86_64, aarch64 and arm Linux, not {triple}"
        )
    decl, call = _PAUSE[arch]
    # C's long (syscall's arguments, timespec's fields): `to_long` widens an i32 to it,
    # `from_long` widens it to i64 (an identity bitcast where the widths agree)
    wide = long_bits(triple) == 64
    return _IR.format(
        long=f"i{long_bits(triple)}",
        to_long="sext" if wide else "bitcast",
        from_long="bitcast" if wide else "sext",
        pause_decl=decl,
        pause_call=call,
        futex=_FUTEX[arch],
        worker_spin=WORKER_SPIN_NS,
        caller_spin=CALLER_SPIN_NS,
        yield_after=YIELD_AFTER_NS,
        max_chunks=MAX_CHUNKS,
        chunks_per_thread=CHUNKS_PER_THREAD,
        max_chunks_m1=MAX_CHUNKS - 1,
        symbol=SYMBOL,
    )


def runtime_object(target: Target) -> bytes:
    """The runtime as a relocatable object for `target`, to link with exported modules."""
    tm = target_machine(target, pic=True)
    mod = parse_ir(runtime_ir(target.triple), tm, target.triple)
    return tm.emit_object(mod)


def cache_root() -> Path:
    """Where the toolkit keeps what it builds on this machine: $VTA_CACHE_DIR, default
    ~/.cache/vta-codesign."""
    root = os.environ.get("VTA_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "vta-codesign"
    )
    return Path(root)


def _cache_dir() -> Path:
    return cache_root() / "parallel"


@cache
def load_runtime() -> ctypes.CDLL:
    """The host's runtime library, built on first use, loaded globally (idempotent)."""
    target = Target.parse(f"llvm -mtriple={llvm.get_process_triple()}")
    text = runtime_ir(target.triple)
    key = hashlib.sha256(f"{text}{llvmlite.__version__}{target}".encode()).hexdigest()[:16]
    path = _cache_dir() / f"libvta_parallel_{key}.so"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
            obj = Path(tmp) / "parallel.o"
            obj.write_bytes(runtime_object(target))
            so = Path(tmp) / path.name
            r = subprocess.run(["ld", "-shared", "-o", str(so), str(obj)], capture_output=True)
            if r.returncode:
                raise CodegenError(f"linking the parallel runtime failed: {r.stderr.decode()}")
            os.replace(so, path)  # atomic: concurrent builders write the same bytes
    try:
        lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
        llvm.load_library_permanently(str(path))
    except (OSError, RuntimeError) as e:
        raise CodegenError(f"cannot load the parallel runtime {path}: {e}") from e
    lib.vta_runtime_init()
    lib.vta_set_num_threads(default_threads())
    spin = os.environ.get("VTA_WORKER_SPIN_US", "").strip()
    if spin:
        lib.vta_set_worker_spin_ns(_spin_ns(spin, "VTA_WORKER_SPIN_US"))
    return lib


def _spin_ns(us: float | str, what: str) -> ctypes.c_int64:
    try:
        value = float(us)
    except ValueError:
        raise CodegenError(f"{what} must be a number of microseconds, got {us!r}") from None
    if not 0 <= value <= 1e6:
        raise CodegenError(f"{what} must be 0 to 1000000 microseconds, got {us}")
    return ctypes.c_int64(round(value * 1000))


def set_worker_spin_us(us: float) -> None:
    """How long (microseconds) an idle worker spins for the next parallel loop before it sleeps:
    0 frees the cores at once (for a machine shared with other work), longer keeps the pool
    awake between calls further apart."""
    load_runtime().vta_set_worker_spin_ns(_spin_ns(us, "the worker spin"))


def set_num_threads(n: int) -> None:
    """Threads (the caller included) that each parallel loop uses from now on."""
    load_runtime().vta_set_num_threads(int(n))


def get_num_threads() -> int:
    return int(load_runtime().vta_get_num_threads())
