"""Cases for fuzzing the compiler's public entry points in a child process (`testkit.fuzzworker`'s
"call" request): each takes JSON-able arguments, does the real work and returns a short summary;
a toolkit error is the expected answer to bad input, anything else is a bug."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

OPS = ("add", "mul", "floordiv", "floormod", "truediv", "max", "gather", "shifted")


def te_case(shape: Any, dtype: Any, op: str, offset: int, seed: int) -> str:
    """Declare `B = f(A, C)` over tensors of `shape`/`dtype`, build it for the CPU and run it on
    seeded data (divisors include zero and -1; gathers and shifted reads include indices out of
    range)."""
    import compiler
    from compiler import te
    from compiler.tir import expr as E

    a = te.placeholder(shape, dtype, "A")
    c = te.placeholder(shape, dtype, "C")
    n = len(a.shape)
    last = a.shape[-1] if n else 1

    def body(*i):
        x, y = a[i], c[i]
        if op == "gather":
            return a[(*i[:-1], c[i])] if n else x
        if op == "shifted":
            return a[(*i[:-1], offset)] if n else x
        return {
            "add": lambda: x + y,
            "mul": lambda: x * y,
            "floordiv": lambda: x // y,
            "floormod": lambda: x % y,
            "truediv": lambda: x / y,
            "max": lambda: E.Max(x, y),
        }[op]()

    b = te.compute(tuple(a.shape), body, name="B")
    mod = compiler.build(te.create_schedule(b.op), [a, c, b], target="llvm")
    rng = np.random.default_rng(seed)
    np_dtype = np.dtype(dtype if dtype != "bool" else "bool")
    if math.prod(max(int(d), 1) for d in a.shape) > 1 << 22:
        return "built (too large to run here)"
    if np.issubdtype(np_dtype, np.integer):
        info = np.iinfo(np_dtype)
        pool = np.array([0, -1, 1, 2, 7, info.min, info.max, last, last - 1], dtype=object)
        pool = np.array([v for v in pool if info.min <= v <= info.max], dtype=np_dtype)
        data = rng.choice(pool, size=tuple(a.shape)).astype(np_dtype)
        other = rng.choice(pool, size=tuple(a.shape)).astype(np_dtype)
    else:
        data = rng.standard_normal(tuple(a.shape)).astype(np_dtype)
        other = rng.standard_normal(tuple(a.shape)).astype(np_dtype)
    out = np.zeros(tuple(a.shape), np_dtype)
    mod(data, other, out)
    return f"ran {op} on {list(a.shape)} {dtype}"


def database_case(path: str) -> str:
    """Open a records database, read it, rank it and append to it."""
    from compiler.tune.database import Database
    from compiler.tune.record import Record

    with Database(path) as db:
        records = db.records()
        for w in db.workloads():
            db.best(w, "llvm")
        db.add_batch([Record("matmul(1, 1, 1)", "llvm", {"k": 1}, 0, [1e-3])])
        return f"{len(records)} records, {db.skipped} skipped"


def onnx_model(
    op: str, inputs: list[dict], attrs: dict, seed: int, then: dict | list[dict] | None = None
) -> tuple[bytes, dict[str, np.ndarray]]:
    """(a serialized model of one `op` node (opset 17), its seeded float inputs by name); with
    `then` ({"op", "inputs", "attrs"}, or a list of them) a chain of nodes each reading the
    previous one's output and its own `inputs`. Each input is a runtime float tensor
    ({"shape"}), one of the model's runtime inputs again ({"input": k}: a residual), a random
    float initializer ({"weight": shape}), an initializer of given int64, float or bool
    values ({"ints"}, {"floats"}, {"bools"}: a list or a scalar), or a runtime int64 tensor of
    small values, some negative ({"ids": shape}), a runtime bool tensor ({"mask": shape}), or
    a runtime tensor of another dtype ({"shape", "dtype"}: a numpy dtype name)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    graph_inputs, inits, feeds = [], [], {}

    def named(specs: list[dict]) -> list[str]:
        names = []
        for spec in specs:
            if "input" in spec:
                names.append(graph_inputs[spec["input"]].name)
                continue
            name = f"in{len(feeds) + len(inits)}"
            names.append(name)
            given = [k for k in ("ints", "floats", "bools") if k in spec]
            if given:
                value = np.asarray(spec[given[0]])
                dtype = {"ints": np.int64, "floats": np.float32, "bools": np.bool_}[given[0]]
                inits.append(numpy_helper.from_array(value.astype(dtype), name))
            elif "weight" in spec:
                value = rng.standard_normal(spec["weight"]).astype(np.float32)
                inits.append(numpy_helper.from_array(value, name))
            else:
                feeds[name] = _runtime_input(rng, spec)
                elem = helper.np_dtype_to_tensor_dtype(feeds[name].dtype)
                graph_inputs.append(helper.make_tensor_value_info(name, elem, feeds[name].shape))
        return names

    chain = _chain(then)
    outs = [f"t{k}" for k in range(len(chain))] + ["y"]
    nodes = [helper.make_node(op, named(inputs), [outs[0]], **attrs)]
    for k, node in enumerate(chain):
        extra = named(node["inputs"])
        nodes.append(
            helper.make_node(node["op"], [outs[k], *extra], [outs[k + 1]], **node["attrs"])
        )
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, "fuzz", graph_inputs, [out], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return model.SerializeToString(), feeds


def _runtime_input(rng: np.random.Generator, spec: dict) -> np.ndarray:
    """A graph input's seeded values: floats ({"shape"}, of {"dtype"} where given: integers
    small, negative ones where signed), int64 ids ({"ids"}) or bools ({"mask"})."""
    dtype = np.dtype(spec.get("dtype", "float32"))
    if dtype.kind in "iu":
        low = -9 if dtype.kind == "i" else 0
        return rng.integers(low, 10, spec["shape"]).astype(dtype)
    if dtype != np.float32:
        return rng.standard_normal(spec["shape"]).astype(dtype)
    if "ids" in spec:
        return rng.integers(-3, 6, spec["ids"]).astype(np.int64)
    if "mask" in spec:
        return rng.random(spec["mask"]) < 0.5
    return rng.standard_normal(spec["shape"]).astype(np.float32)


def _chain(then: dict | list[dict] | None) -> list[dict]:
    return [] if then is None else [then] if isinstance(then, dict) else list(then)


def _ops(op: str, then: dict | list[dict] | None) -> str:
    return " -> ".join([op, *(node["op"] for node in _chain(then))])


def onnx_case(
    op: str, inputs: list[dict], attrs: dict, seed: int, then: dict | list[dict] | None = None
) -> str:
    """`onnx_model`'s model imported, run on the reference executor, compiled for the CPU and
    run there; the CPU's output must match the reference's."""
    import tempfile
    from pathlib import Path

    from compiler.graph import reference
    from compiler.graph.build_onnx import compile_model
    from compiler.graph.onnx_import import import_onnx

    model, feeds = onnx_model(op, inputs, attrs, seed, then)
    want = reference.run(import_onnx(model), feeds)["y"]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.onnx"
        path.write_bytes(model)
        got = compile_model(path).run(feeds)["y"]
    finite = np.abs(want[np.isfinite(want)])  # NaN or inf (Log, Acos ...) set no tolerance
    scale = float(finite.max()) if finite.size else 0.0
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * scale, equal_nan=True)
    return f"{_ops(op, then)} -> {list(want.shape)}"


def accel_case(
    op: str, inputs: list[dict], attrs: dict, seed: int, then: dict | list[dict] | None = None
) -> str:
    """`onnx_model`'s model on the accelerator: partitioned, quantized on its own input,
    compiled for the pynq configuration and run on `fsim`, where every accelerator group must
    equal the quantized reference kernel bit for bit (the module raises otherwise) and the
    outputs those of the module without a device; the quantized graph on the reference
    executor gives them too, within a few quantization steps (its CPU groups round as numpy,
    the module's as llvm)."""
    import tempfile
    from pathlib import Path

    from compiler.graph.hybrid import compile_for_accelerator
    from compiler.graph.reference import run
    from vta.config import VTAConfig

    model, feeds = onnx_model(op, inputs, attrs, seed, then)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.onnx"
        path.write_bytes(model)
        module, q = compile_for_accelerator(path, VTAConfig.load("pynq"), [feeds], candidates=2)
    want = module.run(feeds)[0]
    got = module.run(feeds, "fsim")[0]
    ref = run(q, feeds)
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
        scale = float(np.abs(ref[name]).max()) if value.size else 0.0
        np.testing.assert_allclose(value, ref[name], 1e-3, 0.05 * scale, err_msg=name)
    return f"{_ops(op, then)} on fsim"


def both_case(
    op: str, inputs: list[dict], attrs: dict, seed: int, then: dict | list[dict] | None = None
) -> str:
    """`onnx_case` on the CPU, then, if the CPU ran it, `accel_case`: a model the CPU runs
    must run on the accelerator target too (its other nodes on the CPU), so a toolkit error
    there is a failure."""
    from vta.errors import VTAError

    described = onnx_case(op, inputs, attrs, seed, then)
    try:
        accel_case(op, inputs, attrs, seed, then)
    except VTAError as e:
        raise AssertionError(f"{described}: runs on the CPU, not with --target vta: {e}") from e
    return f"{described}, on the CPU and on fsim"
