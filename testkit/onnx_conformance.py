"""The onnx package's own test models through the CPU path, each against its reference outputs.

Cases: the node tests (`onnx.backend.test.case.node`: one model per operator use, with the
inputs and outputs the package's own generator writes to `backend/test/data/node`, made here in
memory, since the wheel ships the generator rather than its output; a `data/node` folder, where
an installed package has one, is read instead) and the shipped model folders (`simple`,
`pytorch-operator`, `pytorch-converted`: `model.onnx` beside `test_data_set_*/input_*.pb` and
`output_*.pb`), every model at the opset it was made for. `check_case(name)` compiles a case's model
for the CPU as `vta run` does and compares every output of every data set with ONNX's backend
tolerances (rtol 1e-3, atol 1e-7) and dtype; `sweep` runs cases in `testkit.fuzzworker`
children, so a crash or a hang is an outcome of that case alone.
"""

from __future__ import annotations

import functools
import tempfile
import warnings
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

FOLDERS = ("node", "simple", "pytorch-operator", "pytorch-converted")
TIMEOUT = 120.0  # seconds a case may take before it counts as a hang
# The operators an inference runtime is expected to run (elementwise math and activations,
# comparisons and logic, variadic, indexing, reductions, normalizations, windows in 1-3
# dimensions, layout, Einsum, shape arithmetic): a model of these and of the importer's own
# operators is in scope, whether or not the importer takes them yet.
LISTED = frozenset(
    "Abs Neg Exp Log Sqrt Reciprocal Pow Erf Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh "
    "Atanh Floor Ceil Round Sign Elu Selu Celu PRelu ThresholdedRelu Softplus Softsign "
    "HardSigmoid HardSwish Mish Gelu Equal Less Greater LessOrEqual GreaterOrEqual Not And Or "
    "Xor Where IsNaN IsInf Max Min Sum Mean Expand Tile Gather GatherElements GatherND "
    "ScatterElements ScatterND Range CumSum ArgMax ArgMin TopK ReduceL1 ReduceL2 ReduceLogSum "
    "ReduceLogSumExp ReduceMax ReduceMean ReduceMin ReduceProd ReduceSum ReduceSumSquare "
    "LayerNormalization InstanceNormalization GroupNormalization LRN Conv ConvTranspose MaxPool "
    "AveragePool LpPool DepthToSpace SpaceToDepth Einsum Shape Size ConstantOfShape OneHot "
    "NonZero".split()
)
OUTCOMES = ("matched", "refused", "disagreed", "crashed")


@dataclass
class Case:
    """One test model: its serialized model, data sets (inputs, expected outputs) and
    where it comes from."""

    name: str
    model: bytes
    data_sets: list[tuple[list[Any], list[Any]]]
    source: str
    rtol: float = 1e-3
    atol: float = 1e-7


def _data_root() -> Path:
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data"


def _read_value(path: Path, type_proto: Any) -> Any:
    """A `.pb` data file as a numpy array (a list for a sequence), per the graph's type."""
    import onnx
    from onnx import numpy_helper

    data = path.read_bytes()
    if type_proto.HasField("sequence_type"):
        seq = onnx.SequenceProto()
        seq.ParseFromString(data)
        return numpy_helper.to_list(seq)
    if type_proto.HasField("optional_type"):
        opt = onnx.OptionalProto()
        opt.ParseFromString(data)
        return numpy_helper.to_optional(opt)
    tensor = onnx.TensorProto()
    tensor.ParseFromString(data)
    return numpy_helper.to_array(tensor)


def _array(value: Any) -> Any:
    """A generated case's value as numpy (some cases give TensorProtos), else as given."""
    import onnx
    from onnx import numpy_helper

    return numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else value


def _folder_case(folder: Path, source: str) -> Case:
    import onnx

    raw = (folder / "model.onnx").read_bytes()
    graph = onnx.load_from_string(raw).graph
    initialized = {t.name for t in graph.initializer}
    ins = [v.type for v in graph.input if v.name not in initialized]
    outs = [v.type for v in graph.output]
    sets = []
    for d in sorted(folder.glob("test_data_set_*")):
        inputs = [_read_value(d / f"input_{i}.pb", t) for i, t in enumerate(ins)
                  if (d / f"input_{i}.pb").exists()]  # fmt: skip
        outputs = [_read_value(d / f"output_{i}.pb", t) for i, t in enumerate(outs)]
        sets.append((inputs, outputs))
    return Case(folder.name, raw, sets, source)


@functools.cache
def cases() -> dict[str, Case]:
    """Every case by name (a shipped folder's name prefixed by its folder when a node test
    has that name)."""
    found: dict[str, Case] = {}
    root = _data_root()
    if not (root / "node").is_dir():
        from onnx.backend.test.case.node import collect_testcases

        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            generated = collect_testcases()
        for c in generated:
            sets = [([_array(v) for v in i], [_array(v) for v in o]) for i, o in c.data_sets]
            found[c.name] = Case(c.name, c.model.SerializeToString(), sets, "node", c.rtol, c.atol)
    for source in FOLDERS:
        for folder in sorted((root / source).glob("*/")):
            if (folder / "model.onnx").exists():
                name = folder.name if folder.name not in found else f"{source}/{folder.name}"
                found[name] = _folder_case(folder, source)
    return found


def operators(case: Case) -> set[str]:
    """The operator types of a case's model (subgraphs' included)."""
    import onnx

    seen: set[str] = set()
    graphs = [onnx.load_from_string(case.model).graph]
    while graphs:
        g = graphs.pop()
        for n in g.node:
            seen.add(n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}")
            graphs += [a.g for a in n.attribute if a.HasField("g")]
            graphs += [sub for a in n.attribute for sub in a.graphs]
    return seen


def in_scope(case: Case) -> bool:
    """Whether every operator of the case is in LISTED or the importer's own."""
    from compiler.graph.onnx_import import SUPPORTED

    return operators(case) <= LISTED | set(SUPPORTED)


def check_case(name: str) -> str:
    """Compile case `name`'s model for the CPU as `vta run` does (`cpu_api.load_model`: for a
    data set's values of the inputs it reads as constants, if any, then once per data set)
    and run it on each data set; AssertionError where an output differs from the reference
    in dtype, shape or value (ONNX's backend tolerances). Toolkit errors (a refusal)
    propagate."""
    from compiler.graph.cpu_api import load_model

    case = cases()[name]
    module = None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.onnx"
        path.write_bytes(case.model)
        for k, (inputs, expected) in enumerate(case.data_sets):
            feeds = dict(zip(_input_names(case), inputs, strict=False))
            if module is None or module.manifest.get("bound_inputs"):
                module = load_model(path, inputs=feeds)
            got = module.run({s.name: feeds[s.name] for s in module.inputs})
            count = f"{name}: {len(got)} outputs, {len(expected)} expected"
            assert len(got) == len(expected), count
            for (out, value), want in zip(got.items(), expected, strict=True):
                want = np.asarray(want)
                where = f"{name} data set {k} output {out}"
                assert value.dtype == want.dtype, f"{where}: dtype {value.dtype}, not {want.dtype}"
                np.testing.assert_allclose(value, want, case.rtol, case.atol, True, where)
    return f"{name}: {len(case.data_sets)} data set(s) matched"


def _input_names(case: Case) -> list[str]:
    import onnx

    graph = onnx.load_from_string(case.model).graph
    initialized = {t.name for t in graph.initializer}
    return [v.name for v in graph.input if v.name not in initialized]


@dataclass
class Result:
    """A case's outcome (one of OUTCOMES), its message and whether it is in scope."""

    name: str
    outcome: str
    message: str
    in_scope: bool


def sweep(
    names: Iterable[str] | None = None,
    timeout: float = TIMEOUT,
    progress: Callable[[Result], None] | None = None,
) -> list[Result]:
    """Every case of `names` (default all) checked in a child process: matched, refused (a
    toolkit error in one line), disagreed (a wrong output) or crashed (any other exception, a
    multi-line toolkit error, a signal or no answer within `timeout` seconds)."""
    from .fuzzworker import Worker, WorkerDied

    todo = list(cases()) if names is None else list(names)
    results = []
    with Worker(timeout=timeout) as worker:
        for name in todo:
            scope = in_scope(cases()[name])
            try:
                answer = worker.request(
                    op="call", fn=f"{__name__}:check_case", kwargs={"name": name}
                )
            except WorkerDied as died:
                result = Result(name, "crashed", str(died), scope)
            else:
                result = Result(name, *_classify(answer), scope)
            results.append(result)
            if progress is not None:
                progress(result)
    return results


def _classify(answer: dict) -> tuple[str, str]:
    message = answer.get("message", answer.get("result", ""))
    if answer["outcome"] == "ok":
        return "matched", message
    if answer["outcome"] == "error":
        return ("refused" if "\n" not in message.strip() else "crashed"), message
    if answer["type"] == "AssertionError":
        return "disagreed", message.strip().splitlines()[-1]
    return "crashed", message


def counts(results: list[Result]) -> dict[str, dict[str, int]]:
    """Outcomes counted among the cases in scope, the others, and all."""
    table: dict[str, Counter] = {"in scope": Counter(), "other": Counter(), "all": Counter()}
    for r in results:
        table["in scope" if r.in_scope else "other"][r.outcome] += 1
        table["all"][r.outcome] += 1
    return {k: {o: c[o] for o in OUTCOMES} for k, c in table.items()}
