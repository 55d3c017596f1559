"""Where measurement jobs run: a local pool of isolated worker processes, or a Dask cluster.

Both pools map a picklable function over jobs and return one Outcome per job, never raising for
a job's failure: an exception, a hang past the deadline or a dead worker process is reported as
such, and the local pool replaces the worker so the next job runs on a fresh one. A job's
deadline starts when a worker has loaded it (process start-up and imports do not count), so a
loaded machine does not turn slow-starting healthy jobs into timeouts.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from ..errors import TuningError

STARTED = "started"  # what a worker sends once it has loaded a job, before running it


@dataclass
class Outcome:
    """What became of one job: a value, or status 'exception' / 'timeout' / 'crash'."""

    value: Any = None
    status: str = "ok"
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _worker_main(conn: Connection) -> None:
    while True:
        try:
            message = conn.recv_bytes()
        except (EOFError, OSError):
            return
        try:
            job = pickle.loads(message)  # a job that cannot even be loaded is its own failure
            if job is None:
                return
            fn, args = job
            conn.send(STARTED)
            outcome = Outcome(fn(*args))
        except BaseException as err:  # noqa: BLE001 - a job's failure is data, not our crash
            outcome = Outcome(None, "exception", "".join(traceback.format_exception(err)))
        try:
            conn.send(outcome)
        except OSError:  # the pool is gone (its process was killed): nobody to answer
            return
        except Exception as err:  # the value did not pickle
            conn.send(Outcome(None, "exception", f"result could not be sent back: {err!r}"))


class _Worker:
    def __init__(self, ctx: mp.context.BaseContext):
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child,), daemon=True)
        self.process.start()
        child.close()
        self.job: int | None = None
        self.started = False
        self.deadline = 0.0

    def stop(self, kill: bool = False) -> None:
        if kill:
            self.process.kill()
        else:
            try:
                self.conn.send(None)
            except OSError:
                self.process.kill()
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


class LocalPool:
    """`n_workers` persistent spawned processes; a hung or dead one is killed and replaced.

    A worker gets `startup_timeout` seconds to start and load a job, then `timeout` to run it.
    """

    def __init__(
        self,
        n_workers: int | None = None,
        start_method: str = "spawn",
        startup_timeout: float = 120.0,
    ):
        self.n_workers = n_workers or os.cpu_count() or 1
        self.startup_timeout = startup_timeout
        self._ctx = mp.get_context(start_method)
        self._workers: list[_Worker] = []

    def map(self, fn: Callable[..., Any], jobs: Sequence[tuple], timeout: float) -> list[Outcome]:
        """Run fn(*job) for every job, each within `timeout` seconds of a worker starting it."""
        while len(self._workers) < min(self.n_workers, len(jobs)):
            self._workers.append(_Worker(self._ctx))
        outcomes: list[Outcome | None] = [None] * len(jobs)
        pending = list(range(len(jobs)))[::-1]
        busy: list[_Worker] = []
        while pending or busy:
            for w in self._workers:
                if w.job is None and pending:
                    w.job, w.started = pending.pop(), False
                    w.deadline = time.monotonic() + self.startup_timeout
                    w.conn.send((fn, jobs[w.job]))
                    busy.append(w)
            wait_for = min(w.deadline for w in busy) - time.monotonic()
            ready = wait(
                [x for w in busy for x in (w.conn, w.process.sentinel)], timeout=max(wait_for, 0)
            )
            for w in list(busy):
                if w.conn in ready:
                    try:
                        message = w.conn.recv()
                    except (EOFError, OSError):
                        message = None  # died while answering: handled as a crash below
                    if message == STARTED:
                        w.started, w.deadline = True, time.monotonic() + timeout
                        continue
                    if isinstance(message, Outcome):
                        outcomes[w.job] = message
                        w.job = None
                        busy.remove(w)
                        continue
                if w.conn in ready or w.process.sentinel in ready:
                    w.process.join()
                    code = w.process.exitcode
                    why = f"killed by signal {-code}" if code and code < 0 else f"exit {code}"
                    outcomes[w.job] = Outcome(None, "crash", f"worker process died ({why})")
                elif time.monotonic() >= w.deadline:
                    limit = timeout if w.started else self.startup_timeout
                    what = "no answer" if w.started else "worker did not start the job"
                    outcomes[w.job] = Outcome(None, "timeout", f"{what} within {limit:g} s")
                else:
                    continue
                busy.remove(w)
                self._replace(w)
        return outcomes  # type: ignore[return-value]

    def _replace(self, worker: _Worker) -> None:
        worker.stop(kill=True)
        self._workers[self._workers.index(worker)] = _Worker(self._ctx)

    def close(self) -> None:
        for w in self._workers:
            w.stop()
        self._workers = []

    def __del__(self) -> None:
        if getattr(self, "_workers", None):
            self.close()


class DaskPool:
    """Jobs on a Dask distributed cluster; `resources` (e.g. {"pynq": 1}) picks the workers.
    `scheduler` is a Client, a scheduler address, or None for a local cluster that listens on
    the loopback interface only and has no dashboard."""

    def __init__(self, scheduler: Any, resources: dict[str, float] | None = None):
        try:  # optional: the 'dist' extra
            from distributed import Client, LocalCluster
        except ImportError as err:
            raise TuningError(
                "a Dask pool needs the 'dist' extra: pip install 'dask[distributed]'"
            ) from err
        self._cluster = None
        if scheduler is None:
            self._cluster = LocalCluster(
                host="127.0.0.1", dashboard_address=None, processes=True, resources=resources
            )
            scheduler = self._cluster
        self.client = scheduler if isinstance(scheduler, Client) else Client(scheduler)
        self._own_client = not isinstance(scheduler, Client)
        self.resources = resources

    def map(self, fn: Callable[..., Any], jobs: Sequence[tuple], timeout: float) -> list[Outcome]:
        futures = [
            self.client.submit(fn, *job, resources=self.resources, pure=False) for job in jobs
        ]
        outcomes = []
        for fut in futures:
            try:
                outcomes.append(Outcome(fut.result(timeout=timeout)))
            except TimeoutError:
                fut.cancel()
                outcomes.append(Outcome(None, "timeout", f"no answer within {timeout:g} s"))
            except Exception as err:  # noqa: BLE001 - includes KilledWorker
                status = "crash" if type(err).__name__ == "KilledWorker" else "exception"
                outcomes.append(Outcome(None, status, f"{type(err).__name__}: {err}"))
        return outcomes

    def close(self) -> None:
        if self._own_client:
            self.client.close()
        if self._cluster is not None:
            self._cluster.close()
