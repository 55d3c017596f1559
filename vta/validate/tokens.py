"""Phase 4, tokens and deadlock: every token queue is balanced, never holds more than
`token_queue_depth` tokens, and the modules cannot wait on each other forever.

The check is an abstract run of fetch and the three modules with their token queues and no
timing. Fetch dispatches in order and stalls on a full command queue; each module executes its
queue in order, popping before and pushing after an instruction; a push into a full token queue
waits. Modules run as far ahead as they can (load first), the worst case for token-queue
occupancy. The process network is deterministic, so if this run cannot finish, no real run can.

A finished run also yields happens-before: tokens carry the vector clock of their pusher, so
`clock[i][m]` is the last position in module m's queue known to have finished before
instruction i starts (its own position for its own module).
"""

from __future__ import annotations

import dataclasses
from collections import deque

import numpy as np

from ..isa import Module, TokenQueue
from .stream import Findings, Stream

_QUEUE_SETS = [tuple(TokenQueue(q) for q in range(4) if mask >> q & 1) for mask in range(16)]


@dataclasses.dataclass
class Order:
    """Happens-before of a finished abstract run: each module's instructions in queue order,
    each instruction's position in its module's queue, and each instruction's vector clock."""

    order: list[list[int]]
    pos: list[int]
    clock: list[tuple[int, int, int]]


def check_balance(s: Stream) -> Findings:
    """As many pushes as pops on every queue; names the first unmatched one."""
    out = Findings(s)
    for q in TokenQueue:
        pushes = np.flatnonzero((s.module == q.producer) & s.flags[q.push_flag])
        pops = np.flatnonzero((s.module == q.consumer) & s.flags[q.pop_flag])
        head = (
            f"token queue {q.name.lower()} ({q.producer.label}->{q.consumer.label}) is "
            f"unbalanced: {pushes.size} push(es), {pops.size} pop(s); "
        )
        if pushes.size > pops.size:
            i = int(pushes[pops.size])
            out.append(head + f"the {q.push_flag} of instruction {i} is never popped")
        elif pops.size > pushes.size:
            i = int(pops[pushes.size])
            out.append(head + f"the {q.pop_flag} of instruction {i} has no matching push")
    return out


def _queue_masks(s: Stream, indices: np.ndarray, module: Module, pop: bool) -> list[int]:
    """Per instruction of one module, a bit mask of the token queues it pops (or pushes); bit q
    stands for TokenQueue(q)."""
    mask = np.zeros(indices.size, dtype=np.int64)
    for q in TokenQueue:
        if (q.consumer if pop else q.producer) == module:
            flag = q.pop_flag if pop else q.push_flag
            mask |= s.flags[flag][indices].astype(np.int64) << int(q)
    return mask.tolist()


def check_tokens(s: Stream) -> tuple[Findings, Order | None]:
    """Balance, queue capacity and deadlock; the happens-before order if the run finished."""
    out = check_balance(s)
    order_np = [np.flatnonzero(s.module == m) for m in Module]
    pop_masks = [_queue_masks(s, idx, m, pop=True) for m, idx in zip(Module, order_np, strict=True)]
    push_masks = [
        _queue_masks(s, idx, m, pop=False) for m, idx in zip(Module, order_np, strict=True)
    ]
    order = [idx.tolist() for idx in order_np]
    pos = np.zeros(s.n, dtype=np.int64)
    for idx in order_np:
        pos[idx] = np.arange(len(idx))
    module = s.module.tolist()
    queues: list[deque] = [deque() for _ in TokenQueue]  # clocks of the tokens in flight
    clock: list[tuple] = [()] * s.n
    last = [(-1, -1, -1)] * 3  # clock of each module's latest instruction
    dispatched, started = [0, 0, 0], [0, 0, 0]
    to_push: list[list[TokenQueue]] = [[], [], []]
    overflowed: set[TokenQueue] = set()
    fetched, cmd_depth, capacity = 0, s.config.cmd_queue_depth, s.config.token_queue_depth
    progress = True
    while progress:
        progress = False
        while fetched < s.n:
            m = module[fetched]
            if dispatched[m] - started[m] >= cmd_depth:
                break
            dispatched[m] += 1
            fetched += 1
            progress = True
        for m in range(3):
            pops, pushes, pending = pop_masks[m], push_masks[m], to_push[m]
            while True:
                while pending and len(queues[pending[0]]) < capacity:
                    queues[pending.pop(0)].append(last[m])
                if pending:
                    if pending[0] not in overflowed:
                        overflowed.add(pending[0])
                        out.append(_overflow(s, pending[0], order[m][started[m] - 1]))
                    break
                k = started[m]
                if k == dispatched[m]:
                    break
                need = _QUEUE_SETS[pops[k]]
                if not all(queues[q] for q in need):
                    break
                c = last[m]
                for q in need:
                    c = tuple(map(max, c, queues[q].popleft()))
                last[m] = clock[order[m][k]] = c[:m] + (k,) + c[m + 1 :]
                started[m] = k + 1
                pending.extend(_QUEUE_SETS[pushes[k]])
                progress = True
    if fetched < s.n or started != [len(idx) for idx in order] or any(to_push):
        counts = [len(q) for q in queues]
        out.append(_deadlock(s, fetched, order, started, dispatched, to_push, pop_masks, counts))
        return out, None
    return out, Order(order, pos.tolist(), clock)


def _overflow(s: Stream, q: TokenQueue, i: int) -> str:
    return (
        f"instruction {i} ({s.name(i)}): {q.push_flag} into token queue {q.name.lower()} "
        f"({q.producer.label}->{q.consumer.label}) that already holds "
        f"{s.config.token_queue_depth} tokens (token_queue_depth); the {q.consumer.label} "
        "module must pop before more are pushed"
    )


def _deadlock(s, fetched, order, started, dispatched, to_push, pop_masks, tokens) -> str:
    blocked = []
    for m in Module:
        k = started[m]
        if to_push[m]:
            i = order[m][k - 1]
            blocked.append(
                f"{m.label} at instruction {i} ({s.name(i)}) waits for room in token queue "
                f"{to_push[m][0].name.lower()}"
            )
        elif k < dispatched[m]:
            i = order[m][k]
            waits = [q for q in _QUEUE_SETS[pop_masks[m][k]] if tokens[q] == 0]
            what = ", ".join(
                f"a token in {q.name.lower()} ({q.pop_flag} from {q.producer.label})" for q in waits
            )
            blocked.append(f"{m.label} at instruction {i} ({s.name(i)}) waits for {what}")
    if fetched < s.n:
        blocked.append(
            f"fetch at instruction {fetched} ({s.name(fetched)}) waits for room in the full "
            f"{s.module_name(fetched)} command queue ({s.config.cmd_queue_depth} entries)"
        )
    return "deadlock: " + "; ".join(blocked)
