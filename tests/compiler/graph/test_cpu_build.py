"""Fused groups compiled into one native graph: a small CNN against numpy."""

import itertools

import numpy as np
import pytest

from compiler.codegen.abi import aligned
from compiler.graph.build import Group, Node, plan_offsets, view_aliases
from compiler.graph.build_onnx import compile_groups
from compiler.graph.tasks import conv_task
from compiler.topi import testing
from compiler.tune.dispatch import cpu_history


def build_graph(groups, shapes, consts, inputs, outputs, target="llvm", db=None):
    """The groups through the CPU-layout passes, the memory plan and the build, with the
    schedules of `db`'s and the shipped records (as `vta compile --db` makes them)."""
    with cpu_history(db, target) as records:
        return compile_groups(groups, shapes, consts, inputs, outputs, target, records=records)


def test_small_cnn_matches_numpy(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 16, 10, 10)).astype(np.float32)
    w1 = (rng.standard_normal((32, 16, 3, 3)) * 0.2).astype(np.float32)
    b1 = rng.standard_normal(32).astype(np.float32)
    wd = rng.standard_normal((32, 1, 3, 3)).astype(np.float32)
    fc = rng.standard_normal((10, 32)).astype(np.float32)
    fcb = rng.standard_normal(10).astype(np.float32)
    consts = {
        "w1": testing.oihw_pack(w1, 16, 16),
        "b1": b1.reshape(2, 1, 1, 16),
        "wd": np.ascontiguousarray(wd.reshape(2, 16, 3, 3).transpose(0, 2, 3, 1))[
            :, None, :, :, None
        ],
        "fc": fc,
        "fcb": fcb,
    }
    win = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}
    groups = [
        Group("pack", [Node("PackNCHWc", ["x"], "xp", {"block": 16})]),
        Group(
            "conv",
            [Node("Conv", ["xp", "w1", "b1"], "c1", win), Node("Relu", ["c1"], "r1")],
        ),
        Group("pool", [Node("MaxPool", ["r1"], "p1", {**win, "strides": [2, 2]})]),
        Group(
            "dw",
            [
                Node("Conv", ["p1", "wd"], "d1", {**win, "group": 32}),
                Node("Clip", ["d1"], "d2", {"min": 0.0, "max": 6.0}),
            ],
        ),
        Group("gap", [Node("GlobalAveragePool", ["d2"], "g")]),
        Group("unpack", [Node("UnpackNCHWc", ["g"], "gu"), Node("Flatten", ["gu"], "f")]),
        Group("fc", [Node("Dense", ["f", "fc", "fcb"], "y")]),
    ]
    shapes = {
        "x": (1, 16, 10, 10),
        "xp": (1, 1, 10, 10, 16),
        "c1": (1, 2, 10, 10, 16),
        "r1": (1, 2, 10, 10, 16),
        "p1": (1, 2, 5, 5, 16),
        "d1": (1, 2, 5, 5, 16),
        "d2": (1, 2, 5, 5, 16),
        "g": (1, 2, 1, 1, 16),
        "gu": (1, 32, 1, 1),
        "f": (1, 32),
        "y": (1, 10),
    }
    g = build_graph(groups, shapes, consts, ["x"], ["y"])

    r = np.maximum(testing.conv2d_nchw_python(x, w1, 1, 1) + b1[None, :, None, None], 0)
    p = testing.pool2d_python(r, 3, 2, 1, 1, "max")
    d = np.clip(testing.depthwise_conv2d_python_nchw(p, wd, 1, 1), 0, 6)
    ref = d.mean(axis=(2, 3)) @ fc.T + fcb
    np.testing.assert_allclose(g.run({"x": x})["y"], ref, rtol=1e-4, atol=1e-4)
    # weights start on cache lines, so the kernels' vector loads of them never straddle two
    assert all(p.ctypes.data % 64 == 0 for p in g.params)
    g.save(tmp_path / "cnn")
    assert (tmp_path / "cnn" / "graph.so").exists()


def test_aligned_copies_keep_values_and_shape():
    a = np.arange(10, dtype=np.float32)[1:].reshape(3, 3)  # an unaligned view
    b = aligned(a)
    assert b.ctypes.data % 64 == 0 and b.dtype == np.float32 and b.flags.c_contiguous
    np.testing.assert_array_equal(b, a)
    assert aligned(np.zeros((0, 4))).shape == (0, 4)


def conv_graph():
    """pack, 3x3 conv (6x6 outputs: direct on every target, below Winograd's reach), unpack."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 16, 6, 6)).astype(np.float32)
    w = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
    groups = [
        Group("pack", [Node("PackNCHWc", ["x"], "xp", {"block": 16})]),
        Group("conv", [Node("Conv", ["xp", "w"], "c", {"kernel_shape": [3, 3], "pads": [1] * 4})]),
        Group("unpack", [Node("UnpackNCHWc", ["c"], "y")]),
    ]
    shapes = {"x": x.shape, "xp": (1, 1, 6, 6, 16), "c": (1, 2, 6, 6, 16), "y": (1, 32, 6, 6)}
    consts = {"w": testing.oihw_pack(w, 16, 16)}
    ref = testing.conv2d_nchw_python(x, w, 1, 1)
    return groups, shapes, consts, x, ref


def test_records_apply_to_convolutions_with_the_graphs_blocks(tmp_path):
    from compiler.tune.database import Database
    from compiler.tune.record import MeasureInput, Record
    from compiler.tune.task import create_task

    groups, shapes, consts, x, ref = conv_graph()
    untuned = build_graph(groups, shapes, consts, ["x"], ["y"])
    assert untuned.manifest["untuned"] == ["conv2d_NCHWc(16, 6, 6, 32, 3, 3, 1, 16, 16)"]

    task = create_task("conv2d_NCHWc", (16, 6, 6, 32, 3, 3, 1), "llvm")
    space = task.config_space
    index = next(
        i
        for i in range(len(space))
        if space.is_valid(i)
        and (space.get(i)["tile_ic"].size[1], space.get(i)["tile_oc"].size[1]) == (16, 16)
        and space.get(i)["pad"].val == "task"
    )
    with Database(tmp_path / "r.db") as db:
        db.add_batch([Record.of(MeasureInput(task, space.get(index)), [1e-4])])
    tuned = build_graph(groups, shapes, consts, ["x"], ["y"], db=str(tmp_path / "r.db"))
    assert tuned.manifest["untuned"] == []
    np.testing.assert_allclose(tuned.run({"x": x})["y"], ref, rtol=1e-4, atol=1e-4)


def test_an_unpadded_strided_convolution_is_a_task_and_takes_its_record(tmp_path):
    from compiler.tune.database import Database
    from compiler.tune.record import MeasureInput, Record
    from compiler.tune.task import create_task

    groups, shapes, consts, x, _ = conv_graph()
    w = np.random.default_rng(2).standard_normal((32, 16, 4, 4)).astype(np.float32)
    attrs = {"kernel_shape": [4, 4], "pads": [0] * 4, "strides": [2, 2]}
    groups[1] = Group("conv", [Node("Conv", ["xp", "w"], "c", attrs)])
    shapes = {**shapes, "c": (1, 2, 2, 2, 16), "y": (1, 32, 2, 2)}
    consts = {"w": testing.oihw_pack(w, 16, 16)}
    task = conv_task(groups[1], {**shapes, "w": consts["w"].shape})
    assert task.task_args() == (16, 6, 6, 32, 4, 4, 2, 16, 16, 0)

    tuning = create_task("conv2d_NCHWc", task.task_args(), "llvm")
    cfg = tuning.config_space.get(0)
    with Database(tmp_path / "r.db") as db:
        db.add_batch([Record.of(MeasureInput(tuning, cfg), [1e-4])])
    tuned = build_graph(groups, shapes, consts, ["x"], ["y"], db=str(tmp_path / "r.db"))
    assert tuned.manifest["untuned"] == []
    ref = testing.conv2d_nchw_python(x, w, 2, 0)
    np.testing.assert_allclose(tuned.run({"x": x})["y"], ref, rtol=1e-4, atol=1e-4)


def pointwise_graph(c=160, size=5, k=1, stride=1):
    """pack, a 1x1 conv of `c` input channels (10 blocks of 16: more than the 8 a chunk takes
    on every target this runs on) to 32, unpack."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, c, size, size)).astype(np.float32)
    w = rng.standard_normal((32, c, k, k)).astype(np.float32)
    attrs = {"kernel_shape": [k, k], "pads": [0] * 4, "strides": [stride] * 2}
    out = (size - k) // stride + 1
    groups = [
        Group("pack", [Node("PackNCHWc", ["x"], "xp", {"block": 16})]),
        Group("conv", [Node("Conv", ["xp", "w"], "c", attrs)]),
        Group("unpack", [Node("UnpackNCHWc", ["c"], "y")]),
    ]
    shapes = {
        "x": x.shape,
        "xp": (1, c // 16, size, size, 16),
        "c": (1, 2, out, out, 16),
        "y": (1, 32, out, out),
    }
    consts = {"w": testing.oihw_pack(w, 16, 16)}
    ref = testing.conv2d_nchw_python(x, w, stride, 0)
    return (groups, shapes, consts, ["x"], ["y"]), x, ref


@pytest.mark.parametrize(
    "c,k,stride,pointwise",
    [(160, 1, 1, 1), (128, 1, 1, 0), (160, 1, 2, 0), (160, 3, 1, 0)],
)
def test_wide_1x1_convolutions_run_by_input_channel_chunks(c, k, stride, pointwise):
    # only a 1x1 stride-1 conv with more input blocks than one chunk: 8 blocks (128) fit one
    graph_args, x, ref = pointwise_graph(c, 5, k, stride)
    graph = build_graph(*graph_args)
    assert graph.manifest["pointwise"] == pointwise
    template = "conv2d_1x1_NCHWc" if pointwise else "conv2d_NCHWc"
    assert graph.manifest["untuned"][0].startswith(f"{template}({c}, 5, 5, 32")
    np.testing.assert_allclose(graph.run({"x": x})["y"], ref, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("template", ["conv2d_1x1_NCHWc", "conv2d_NCHWc"])
def test_a_1x1_convolution_takes_the_template_its_records_hold(tmp_path, template):
    from compiler.tune.database import Database
    from compiler.tune.record import MeasureInput, Record
    from compiler.tune.task import create_task

    graph_args, x, ref = pointwise_graph()
    args = (160, 5, 5, 32) if template == "conv2d_1x1_NCHWc" else (160, 5, 5, 32, 1, 1, 1)
    tuning = create_task(template, (*args, 16, 16), "llvm")
    with Database(tmp_path / "r.db") as db:
        db.add_batch([Record.of(MeasureInput(tuning, tuning.config_space.get(2)), [1e-4])])
    graph = build_graph(*graph_args, db=str(tmp_path / "r.db"))
    # a record of the direct template alone keeps the conv direct (records tuned before
    # the pointwise kernel existed, and the AVX-512 records shipped)
    assert graph.manifest["pointwise"] == (template == "conv2d_1x1_NCHWc")
    assert graph.manifest["tuned_from"]["records"] == 1 and graph.manifest["untuned"] == []
    np.testing.assert_allclose(graph.run({"x": x})["y"], ref, rtol=1e-4, atol=1e-3)


def test_plan_offsets_reuses_dead_tensors():
    chain = [Group(f"g{k}", [Node("Relu", [f"t{k}"], f"t{k + 1}")]) for k in range(4)]
    shapes = {f"t{k}": (1, 16) for k in range(5)}
    offsets, arena, bound = plan_offsets(chain, shapes, {"t4"})
    assert arena == bound == 128  # t1 and t2 live together; t3 reuses t1's place
    assert offsets["t3"] == offsets["t1"] != offsets["t2"]


def test_plan_offsets_places_large_tensors_first():
    """t1 (64 B) then t2 and t3 (128 B each, live together): placed in execution order, t3
    cannot use t1's 64 bytes and the arena needs 320; largest first meets the bound."""
    chain = [Group(f"g{k}", [Node("Relu", [f"t{k}"], f"t{k + 1}")]) for k in range(4)]
    shapes = {"t0": (1, 16), "t1": (1, 16), "t2": (1, 32), "t3": (1, 32), "t4": (1, 16)}
    offsets, arena, bound = plan_offsets(chain, shapes, {"t4"})
    assert arena == bound == 256
    assert offsets["t1"] == offsets["t3"] != offsets["t2"]


def test_plan_offsets_places_a_view_at_its_tensor_for_its_readers_lifetime():
    """t2 = Reshape(t1) shares t1's bytes, so t1 stays live while t2 is read (by g2, which
    writes t3): t3 cannot take t1's place; a Reshape of the graph's input is no view."""
    ops = ["Reshape", "Relu", "Reshape", "Relu", "Relu"]
    chain = [Group(f"g{k}", [Node(op, [f"t{k}"], f"t{k + 1}")]) for k, op in enumerate(ops)]
    shapes = {f"t{k}": (1, 16) for k in range(6)}
    assert view_aliases(chain, {"t5"}) == {"t3": "t2"}
    offsets, arena, bound = plan_offsets(chain, shapes, {"t5"})
    assert offsets["t3"] == offsets["t2"] != offsets["t4"]
    assert arena == bound == 128
    assert view_aliases(chain, {"t3"}) == {}  # a graph output gets its own buffer


def test_plan_offsets_never_overlaps_tensors_live_together():
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(2, 30))
        groups = [
            Group(f"g{k}", [Node("Add", [f"t{int(rng.integers(0, k + 1))}", f"t{k}"], f"t{k + 1}")])
            for k in range(n)
        ]
        shapes = {f"t{k}": (1, int(rng.integers(1, 400))) for k in range(n + 1)}
        offsets, arena, bound = plan_offsets(groups, shapes, {f"t{n}"})
        last = {t: k for k, g in enumerate(groups) for t in g.inputs}
        life = {g.output: (k, max(k, last.get(g.output, k))) for k, g in enumerate(groups)}
        place = {t: (o, o + -(-shapes[t][1] * 4 // 64) * 64) for t, o in offsets.items()}
        assert bound <= arena == max(hi for _, hi in place.values())
        assert all(o % 64 == 0 for o in offsets.values())
        for t, u in itertools.combinations(place, 2):
            if life[t][0] <= life[u][1] and life[u][0] <= life[t][1]:
                assert place[t][1] <= place[u][0] or place[u][1] <= place[t][0], (t, u)


@pytest.mark.parametrize("name", ["mobilenet_v1", "resnet18"])
def test_network_arenas_meet_their_lower_bound(name, tmp_path):
    from compiler.codegen.target import target_scope
    from compiler.graph.build_onnx import import_groups
    from compiler.zoo import NETWORKS

    (tmp_path / "m.onnx").write_bytes(NETWORKS[name]())
    with target_scope("llvm"):
        groups, shapes, _, _, outputs = import_groups(tmp_path / "m.onnx", None, False)
    _, arena, bound = plan_offsets(groups, shapes, set(outputs))
    assert arena == bound  # in execution order: MobileNet-v1 1.46x, ResNet-18 1.15x


def test_shipped_records_serve_tasks_only_on_their_instruction_set(tmp_path, monkeypatch):
    from compiler.codegen.target import Target, cpu_facts
    from compiler.tune import shipped
    from compiler.tune.database import Database
    from compiler.tune.record import MeasureInput, Record
    from compiler.tune.task import create_task

    monkeypatch.setattr(shipped, "RECORDS_DIR", tmp_path)
    groups, shapes, consts, x, ref = conv_graph()
    task = create_task("conv2d_NCHWc", (16, 6, 6, 32, 3, 3, 1, 16, 16), "llvm")
    avx512 = "llvm -mcpu=skylake-avx512 -mattr=+avx512f,+avx2,+fma"
    with Database() as db:
        db.add_batch([Record.of(MeasureInput(task, task.config_space.get(0)), [1e-4])])
        path, n = shipped.ship(db, Target.parse(avx512))
    assert n == 1 and path.name == "x86_64-avx512.jsonl"

    def build(target):
        return build_graph(groups, shapes, consts, ["x"], ["y"], target=target)

    graph = build(avx512)
    assert graph.manifest["untuned"] == []
    assert graph.manifest["tuned_from"] == {"shipped records (x86_64-avx512)": 1}
    if cpu_facts().isa == "avx512":  # the host can run the AVX-512 kernels
        np.testing.assert_allclose(graph.run({"x": x})["y"], ref, rtol=1e-4, atol=1e-4)
    avx2 = build("llvm -mcpu=haswell -mattr=+avx2,+fma,-avx512f")
    assert avx2.manifest["untuned"] and avx2.manifest["tuned_from"] == {}
    monkeypatch.setenv("VTA_SHIPPED_RECORDS", "0")
    assert build(avx512).manifest["untuned"]


def test_winograd_reaches_7x7_outputs_only_with_16_vector_registers():
    from compiler.codegen.target import target_scope
    from compiler.graph.passes.cpu_layout import winograd_min_output

    with target_scope("llvm -mcpu=haswell"):
        assert winograd_min_output() == 7
    with target_scope("llvm -mcpu=skylake-avx512"):
        assert winograd_min_output() == 14


def test_winograd_convolutions_match_onnxruntime(tmp_path):
    """3x3 stride-1 convolutions with outputs of at least 14x14 run by Winograd's F(2x2, 3x3)
    (a residual block at 16x16: both convs); a strided one stays direct."""
    import pytest

    ort = pytest.importorskip("onnxruntime")
    from compiler.graph.build_onnx import compile_model
    from compiler.zoo import _Builder

    b = _Builder(seed=5)
    x1 = b.node("Relu", [b.bn(b.conv("x", 16, 32, 3), 32)])
    y = b.node("Relu", [b.node("Add", [b.bn(b.conv(x1, 32, 32, 3), 32), x1])])
    y = b.node("Relu", [b.conv(y, 32, 32, 3, stride=2)])
    path = tmp_path / "block.onnx"
    path.write_bytes(b.model("x", (1, 16, 16, 16), y, (1, 32, 8, 8)))
    graph = compile_model(path, target="llvm")
    assert graph.manifest["winograd"] == 2
    x = {"x": np.random.default_rng(0).standard_normal((1, 16, 16, 16), np.float32)}
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, x)[0]
    got = graph.run(x)[y]
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * np.abs(want).max())


def test_cpu_layout_passes_print_their_choices(tmp_path, capsys):
    """`--print-passes` shows what the CPU-layout passes chose, between the layout and the
    memory plan: here two 3x3 convs at 16x16 by Winograd, the strided one direct."""
    from compiler.graph.build_onnx import compile_model
    from compiler.zoo import _Builder

    b = _Builder(seed=5)
    x1 = b.node("Relu", [b.bn(b.conv("x", 16, 32, 3), 32)])
    y = b.node("Relu", [b.conv(b.conv(x1, 32, 32, 3), 32, 32, 3, stride=2)])
    path = tmp_path / "m.onnx"
    path.write_bytes(b.model("x", (1, 16, 16, 16), y, (1, 32, 8, 8)))
    graph = compile_model(path, target="llvm", print_passes=True)
    out = capsys.readouterr().out
    names = ["== layout", "== pack_dense_weights ==", "== winograd_convs", "== pointwise_convs"]
    assert [out.index(n) for n in [*names, "== memory plan =="]] == sorted(
        out.index(n) for n in [*names, "== memory plan =="]
    )
    chosen = out.split("== winograd_convs")[1].split("==")[1].strip().splitlines()
    assert len(chosen) == graph.manifest["winograd"] == 2
    assert all("[1,2,16,16,16]" in line or "16,16," in line for line in chosen), chosen
