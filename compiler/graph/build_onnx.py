"""A stop-gap front end until the graph IR's import, fusion, layout and planning passes drive
`build.build_graph`: ONNX -> fused groups, covering the operators of ResNet-18, MobileNet-v1 and
the DQN network only (Conv with BatchNormalization folded, Relu, Clip, Add, MaxPool,
GlobalAveragePool, Flatten, Gemm). Every 4-d activation is kept in NCHW[x]c with the block
`x86.channel_block(C)`; a convolution's group fuses its folded BN, bias, a residual Add and the
activation after it. Intermediate tensors share the arena by liveness (`plan_offsets`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..codegen.target import target_scope
from ..errors import OperatorError
from ..topi import testing, x86
from ..topi.nn.utils import out_size
from .build import Group, Node, build_graph, plan_offsets
from .executor import GraphModule

_ACTIVATIONS = ("Relu", "Clip")


def compile_model(
    path: str | Path,
    target: str = "llvm",
    db: str | None = None,
    shapes: dict | None = None,
    log=None,
    print_passes: bool = False,
) -> GraphModule:
    """The ONNX model at `path` compiled into a GraphModule (supported operators only); `shapes`
    gives the input's shape where the model leaves a dimension symbolic (`--shape NAME=DIMS`).
    `print_passes` is not supported by this front end."""
    if print_passes:
        raise OperatorError("--print-passes needs the graph IR's front end (not built yet)")
    with target_scope(target):
        groups, tensor_shapes, params, inputs, outputs = import_groups(path, shapes)
    offsets, arena, bound = plan_offsets(groups, tensor_shapes, set(outputs))
    graph = build_graph(
        groups, tensor_shapes, params, inputs, outputs, offsets, arena, target, log, db
    )
    graph.manifest["arena_lower_bound"] = bound
    return graph


SUPPORTED = (
    "Conv", "BatchNormalization", "Relu", "Clip", "Add", "MaxPool", "AveragePool",
    "GlobalAveragePool", "Flatten", "Gemm",
)  # fmt: skip


def unsupported_nodes(nodes: list) -> list[str]:
    """'NAME (OP)' of every node this front end cannot import, in graph order."""
    return [f"{n.name or n.output[0]} ({n.op_type})" for n in nodes if n.op_type not in SUPPORTED]


def _input_shape(inp, given: dict | None, path) -> tuple[int, ...]:
    """The input's static shape: the model's, or `given[name]` where it is symbolic."""
    dims = inp.type.tensor_type.shape.dim
    model = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in dims]
    if given and inp.name in given:
        shape = tuple(int(v) for v in given[inp.name])
        fixed = [(m, v) for m, v in zip(model, shape, strict=False) if isinstance(m, int)]
        if len(shape) != len(model) or any(m != v for m, v in fixed):
            raise OperatorError(
                f"--shape {inp.name}={','.join(map(str, shape))} does not fit the model's input "
                f"{inp.name} of shape {model}"
            )
        if min(shape, default=0) < 1:
            raise OperatorError(f"--shape {inp.name}: every dimension must be >= 1")
        return shape
    if not model or not all(isinstance(m, int) and m > 0 for m in model):
        raise OperatorError(
            f"{path}: input {inp.name} has the shape {model} with symbolic dimensions; give it "
            f"with --shape {inp.name}=D1,D2,..."
        )
    return tuple(model)


def import_groups(
    path: str | Path, given_shapes: dict | None = None
) -> tuple[list[Group], dict, dict, list[str], list[str]]:
    """(groups, tensor shapes, constant parameters, input names, output names) of a model."""
    import onnx
    from onnx import numpy_helper

    try:
        model = onnx.load(str(path))
    except Exception as e:
        raise OperatorError(f"{path}: not an ONNX model: {e}") from e
    g = model.graph
    consts = {t.name: numpy_helper.to_array(t).astype(np.float32) for t in g.initializer}
    nodes = list(g.node)
    users: dict[str, int] = {}
    for n in nodes:
        for t in n.input:
            users[t] = users.get(t, 0) + 1
    graph_inputs = [i for i in g.input if i.name not in consts]
    if len(graph_inputs) != 1 or len(g.output) != 1:
        raise OperatorError(
            f"{path}: {len(graph_inputs)} inputs and {len(g.output)} outputs; this front end "
            "imports models with one input and one output"
        )
    (inp,) = graph_inputs
    unknown = set(given_shapes or ()) - {inp.name}
    if unknown:
        raise OperatorError(
            f"--shape {sorted(unknown)[0]}: the model has no input of that name "
            f"(its input is {inp.name})"
        )
    shape = _input_shape(inp, given_shapes, path)
    missing = unsupported_nodes(nodes)
    if missing:
        shown = ", ".join(missing[:20]) + (
            f" and {len(missing) - 20} more" if len(missing) > 20 else ""
        )
        raise OperatorError(
            f"{path}: {len(missing)} node(s) use operators this front end does not support "
            f"(it supports {', '.join(SUPPORTED)}): {shown}"
        )
    out_name = g.output[0].name
    shapes: dict[str, tuple] = {inp.name: shape}
    params: dict[str, np.ndarray] = {}
    groups: list[Group] = []
    packed: dict[str, str] = {}  # NCHW tensor name -> its packed tensor's name
    done: set[str] = set()

    def block(c: int) -> int:
        return x86.channel_block(c)

    def pack_input(name: str) -> str:
        if name in packed:
            return packed[name]
        n, c, h, w = shapes[name]
        p = f"{name}_nchwc"
        groups.append(Group(f"pack_{name}", [Node("PackNCHWc", [name], p, {"block": block(c)})]))
        shapes[p] = (n, c // block(c), h, w, block(c))
        packed[name] = p
        return p

    def attr(node, key, default=None):
        for a in node.attribute:
            if a.name == key:
                return onnx.helper.get_attribute_value(a)
        return default

    def chain(start) -> list:
        """Single-user nodes after `start` that fuse into its kernel: a BatchNormalization
        right after a Conv, an Add whose other operand exists already, then an activation."""
        out, cur = [], start
        while users.get(cur.output[0], 0) == 1:
            nxt = next(n for n in nodes if cur.output[0] in n.input)
            kinds = [o.op_type for o in out]
            if nxt.op_type == "BatchNormalization":
                if out or start.op_type != "Conv":
                    break
            elif nxt.op_type == "Add":
                other = [i for i in nxt.input if i != cur.output[0]]
                if "Add" in kinds or len(other) != 1 or other[0] not in packed:
                    break
            elif nxt.op_type not in _ACTIVATIONS:
                break
            out.append(nxt)
            cur = nxt
            if nxt.op_type in _ACTIVATIONS:
                break
        return out

    def clip_bounds(node) -> tuple[float | None, float | None]:
        if len(node.input) > 1:  # opset 11+: min and max as inputs
            lo, hi = (node.input[k] if len(node.input) > k else "" for k in (1, 2))
            return (float(consts[lo]) if lo else None), (float(consts[hi]) if hi else None)
        return attr(node, "min"), attr(node, "max")

    def import_node(node) -> None:
        """Add the node's group (with the nodes fused into it) to `groups`."""
        op = node.op_type
        if op == "Conv":
            x = pack_input(node.input[0]) if node.input[0] not in packed else packed[node.input[0]]
            w = consts[node.input[1]]
            bias = consts[node.input[2]] if len(node.input) > 2 else np.zeros(w.shape[0], "f4")
            tail = chain(node)
            node_out = node.output[0]
            if tail and tail[0].op_type == "BatchNormalization":
                bn = tail.pop(0)
                node_out = bn.output[0]
                gamma, beta, mean, var = (consts[t] for t in bn.input[1:])
                scale = gamma / np.sqrt(var + attr(bn, "epsilon", 1e-5))
                w = w * scale[:, None, None, None]
                bias = (bias - mean) * scale + beta
                done.add(bn.output[0])
            oc, c = w.shape[0], shapes[x][1] * shapes[x][4]
            group = attr(node, "group", 1)
            ib, ob = shapes[x][4], block(oc)
            kh, kw = w.shape[2:]
            pads = list(attr(node, "pads", [0, 0, 0, 0]))
            strides = list(attr(node, "strides", [1, 1]))
            wname, bname = f"{node.name}_w", f"{node.name}_b"
            if group == 1:
                params[wname] = testing.oihw_pack(w, ib, ob)
            elif group == c == oc:
                params[wname] = np.ascontiguousarray(
                    w.reshape(c // ob, ob, kh, kw).transpose(0, 2, 3, 1)
                )[:, None, :, :, None]
            else:
                raise OperatorError(f"node {node.name}: Conv group {group} is not supported here")
            params[bname] = np.ascontiguousarray(bias.reshape(oc // ob, 1, 1, ob))
            h, wd = shapes[x][2:4]
            oh = out_size(h, kh, strides[0], 1, pads[0] + pads[2])
            ow = out_size(wd, kw, strides[1], 1, pads[1] + pads[3])
            attrs = {"kernel_shape": [kh, kw], "pads": pads, "strides": strides, "group": group}
            conv_out = f"{node.output[0]}_nchwc"
            members = [Node("Conv", [x, wname, bname], conv_out, attrs)]
            cur, prev = conv_out, node_out
            for t in tail:
                nxt = f"{t.output[0]}_nchwc"
                if t.op_type == "Add":
                    other = next(i for i in t.input if i != prev)
                    members.append(Node("Add", [cur, packed[other]], nxt))
                elif t.op_type == "Relu":
                    members.append(Node("Relu", [cur], nxt))
                else:
                    lo, hi = clip_bounds(t)
                    members.append(Node("Clip", [cur], nxt, {"min": lo, "max": hi}))
                shapes[nxt] = (1, oc // ob, oh, ow, ob)
                cur, prev = nxt, t.output[0]
                done.add(t.output[0])
            shapes[conv_out] = (1, oc // ob, oh, ow, ob)
            groups.append(Group(node.name, members))
            packed[prev] = cur
        elif op in ("MaxPool", "AveragePool", "GlobalAveragePool"):
            x = packed[node.input[0]]
            n_, cc, h, w_, b = shapes[x]
            out = f"{node.output[0]}_nchwc"
            if op == "GlobalAveragePool":
                attrs, (oh, ow) = {}, (1, 1)
            else:
                k = list(attr(node, "kernel_shape"))
                pads = list(attr(node, "pads", [0, 0, 0, 0]))
                strides = list(attr(node, "strides", [1, 1]))
                attrs = {"kernel_shape": k, "pads": pads, "strides": strides}
                oh = out_size(h, k[0], strides[0], 1, pads[0] + pads[2])
                ow = out_size(w_, k[1], strides[1], 1, pads[1] + pads[3])
            groups.append(Group(node.name, [Node(op, [x], out, attrs)]))
            shapes[out] = (n_, cc, oh, ow, b)
            packed[node.output[0]] = out
        elif op == "Flatten":
            x = packed[node.input[0]]
            n_, cc, h, w_, b = shapes[x]
            flat = node.output[0]
            un = f"{flat}_nchw"
            groups.append(
                Group(node.name, [Node("UnpackNCHWc", [x], un), Node("Flatten", [un], flat)])
            )
            shapes[un], shapes[flat] = (n_, cc * b, h, w_), (n_, cc * b * h * w_)
        elif op == "Gemm":
            if attr(node, "transB", 0) != 1 or attr(node, "transA", 0):
                raise OperatorError(f"node {node.name}: Gemm needs transB=1, transA=0 here")
            wname, bname = f"{node.name}_w", f"{node.name}_b"
            params[wname] = consts[node.input[1]] * attr(node, "alpha", 1.0)
            units = params[wname].shape[0]
            has_bias = len(node.input) > 2 and node.input[2]
            bias = consts[node.input[2]] if has_bias else np.zeros(units, np.float32)
            params[bname] = np.broadcast_to(bias * attr(node, "beta", 1.0), (units,)).copy()
            members = [Node("Dense", [node.input[0], wname, bname], node.output[0])]
            shapes[node.output[0]] = (shapes[node.input[0]][0], params[wname].shape[0])
            last = node.output[0]
            for t in chain(node):
                if t.op_type != "Relu":
                    break
                members.append(Node("Relu", [last], t.output[0]))
                shapes[t.output[0]] = shapes[last]
                last = t.output[0]
                done.add(t.output[0])
            groups.append(Group(node.name, members))
        else:
            raise OperatorError(f"node {node.name}: {op} is not supported by this front end")

    for node in nodes:
        if node.output[0] in done:
            continue
        try:
            import_node(node)
        except OperatorError:
            raise
        except (KeyError, IndexError, ValueError, TypeError, StopIteration) as e:
            raise OperatorError(
                f"{path}: node {node.name or node.output[0]} ({node.op_type}): this front end "
                f"cannot import it ({type(e).__name__}: {e})"
            ) from None
        done.add(node.output[0])

    if out_name not in shapes and out_name in packed:  # unpack once, at the output
        n_, cc, h, w_, b = shapes[packed[out_name]]
        groups.append(Group("unpack_output", [Node("UnpackNCHWc", [packed[out_name]], out_name)]))
        shapes[out_name] = (n_, cc * b, h, w_)
    if out_name not in shapes:
        raise OperatorError(f"output {out_name} was not computed")
    return groups, shapes, params, [inp.name], [out_name]


__all__ = ["compile_model"]
