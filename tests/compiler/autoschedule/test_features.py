"""Program features from the light lowering (each store's value cut to its first reads) equal
the full lowering's, on the group kinds the task scheduler tunes and on matmul."""

import json

import numpy as np
import pytest

from compiler.autoschedule import AnsorTuner, SearchTask
from compiler.autoschedule.annotate import annotate, mutate
from compiler.autoschedule.features import _compact, featurize
from compiler.graph.tasks import WORKLOAD
from compiler.tune.tir_features import lower_for_features, store_nest, stores


def group(conv: dict, inputs: list, extra: list, output: list) -> SearchTask:
    nodes = [["Conv", ["in0", "in1", "in2"], {"group": 1, "pads": [1, 1, 1, 1], **conv}]]
    nodes += extra
    spec = {"inputs": inputs, "nodes": nodes, "output": output}
    return SearchTask(WORKLOAD, (json.dumps(spec, sort_keys=True, separators=(",", ":")),))


TASKS = {
    "winograd+add+relu": group(
        {"kernel_shape": [3, 3], "strides": [1, 1], "winograd": 2},
        [[1, 2, 8, 8, 16], [4, 4, 2, 32, 16], [2, 1, 1, 16], [1, 2, 8, 8, 16]],
        [["Add", ["n0", "in3"], {}], ["Relu", ["n1"], {}]],
        [1, 2, 8, 8, 16],
    ),
    "direct 3x3/2+relu": group(
        {"kernel_shape": [3, 3], "strides": [2, 2]},
        [[1, 2, 16, 16, 16], [2, 2, 3, 3, 16, 16], [2, 1, 1, 16]],
        [["Relu", ["n0"], {}]],
        [1, 2, 8, 8, 16],
    ),
    "matmul": SearchTask("matmul", (64, 64, 64)),
}


def nests(program, loads_only: bool) -> list:
    s, args = program.schedule()
    found = [
        _compact(store_nest(st, f))
        for st, f in stores(lower_for_features(s, args, loads_only).body)
    ]
    return [(n.loops, list(n.strides.items())) for n in found]


@pytest.mark.parametrize("name", list(TASKS))
def test_light_lowering_gives_the_full_lowerings_loop_nests(name):
    tuner = AnsorTuner(TASKS[name], seed=1)
    programs = []
    for k in range(12):
        p = annotate(tuner.sketches[k % len(tuner.sketches)], tuner.rng)
        programs.append((mutate(p, tuner.rng) or p) if k % 2 else p)
    for p in programs:
        light = nests(p, True)
        assert light == nests(p, False), str(p)
        assert len(light) >= 2  # a stage besides the output was lowered
    rows, valid = featurize(programs)
    assert valid.all() and np.abs(rows).sum(axis=1).min() > 0
