"""Genetic-algorithm baseline (AutoTVM's GATuner): genes are knob digit vectors, no model.

Parents are the last generation plus the `elite_num` best configs ever measured, drawn with
probability proportional to throughput; children cross over at one point, each knob mutates with
probability `mutation_prob`, and children already measured are redrawn.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .record import MeasureInput, Record
from .space import ConfigEntity
from .task import Task
from .tuner import Tuner


class GATuner(Tuner):
    def __init__(
        self,
        task: Task,
        pop_size: int = 100,
        elite_num: int = 3,
        mutation_prob: float = 0.1,
        seed: int = 0,
    ):
        super().__init__(task, seed)
        self.pop_size = pop_size
        self.elite_num = elite_num
        self.mutation_prob = mutation_prob
        self.scores: dict[int, float] = {}
        self.queue: list[int] = list(self.space.sample(self.rng, pop_size).tolist())
        self.generation: list[int] = list(self.queue)

    def next_batch(self, batch_size: int) -> list[ConfigEntity]:
        self.queue = [i for i in self.queue if i not in self.visited]  # replayed on resume
        if not self.queue:
            self.queue = self._next_generation()
            self.generation = list(self.queue)
        batch, self.queue = self.queue[:batch_size], self.queue[batch_size:]
        return [self.space.get(i) for i in batch]

    def update(self, inputs: Sequence[MeasureInput], results: Sequence[Record]) -> None:
        super().update(inputs, results)
        for inp, res in zip(inputs, results, strict=True):
            self.scores[inp.config.index] = self.throughput(res)

    def _next_generation(self) -> list[int]:
        space = self.space
        elites = sorted(self.scores, key=self.scores.get, reverse=True)[: self.elite_num]
        parents = dict.fromkeys([i for i in self.generation if i in self.scores] + elites)
        idx = np.fromiter(parents, np.int64, len(parents))
        fit = np.array([self.scores[i] for i in parents], dtype=np.float64)
        if not len(idx) or fit.max() <= 0:
            return space.sample(self.rng, self.pop_size, exclude=self.visited).tolist()
        genes = space.digits(idx)
        prob = fit / fit.sum()
        children: dict[int, None] = {}
        for _ in range(20):
            need = self.pop_size - len(children)
            if need <= 0:
                break
            a = genes[self.rng.choice(len(idx), size=need, p=prob)]
            b = genes[self.rng.choice(len(idx), size=need, p=prob)]
            cut = self.rng.integers(0, genes.shape[1] + 1, size=need)[:, None]
            child = np.where(np.arange(genes.shape[1]) < cut, a, b)
            mutate = self.rng.random(child.shape) < self.mutation_prob
            child = np.where(mutate, self.rng.integers(0, space.dims, size=child.shape), child)
            new = space.indices(child)
            for i in new[space.valid_mask(new)].tolist():
                if i not in self.visited:
                    children[i] = None
        out = list(children)[: self.pop_size]
        if len(out) < self.pop_size:  # converged population: top up with random configs
            out += space.sample(
                self.rng, self.pop_size - len(out), exclude=self.visited | set(out)
            ).tolist()
        return out
