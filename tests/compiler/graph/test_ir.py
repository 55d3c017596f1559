"""The graph IR prints one line per node with its attributes and output types, keeps groups
after fusion, and prunes what no output needs."""

import numpy as np

from compiler.graph.ir import Graph, Group, Node, Pattern, Value, pattern_of


def small_graph() -> Graph:
    g = Graph(
        [
            Node("Conv", ["x", "w"], ["c"], {"strides": [2, 2], "group": 1}, "conv0"),
            Node("Relu", ["c"], ["y"]),
            Node("Sigmoid", ["c"], ["dead"]),
        ],
        ["x"],
        ["y"],
        {"x": Value("x", (1, 3, 8, 8), "float32"), "c": Value("c", (1, 4, 4, 4), "float32")},
    )
    g.add_constant("w", np.zeros((4, 3, 3, 3), np.float32))
    g.values["y"] = Value("y", (1, 4, 4, 4), "float32")
    return g


def test_printer_shows_each_node_with_attributes_and_type():
    text = str(small_graph())
    assert "graph graph(%x: float32[1,3,8,8]) {" in text
    assert "const %w : float32[4,3,3,3]" in text
    assert "%c = Conv(%x, %w) {group=1, strides=[2,2]} : float32[1,4,4,4]" in text
    assert "%y = Relu(%c) : float32[1,4,4,4]" in text
    assert "%dead = Sigmoid(%c) : ?[?]" in text
    assert text.splitlines()[-2] == "  return %y"


def test_prune_drops_unused_nodes_and_constants():
    g = small_graph()
    g.add_constant("unused", np.ones(3, np.float32))
    g.prune()
    assert [n.op for n in g.nodes] == ["Conv", "Relu"]
    assert set(g.constants) == {"w"} and "dead" not in g.values


def test_groups_print_with_their_pattern_and_anchor():
    g = small_graph().prune()
    g.groups = [Group("g0", Pattern.OUT_FUSABLE, list(g.nodes))]
    text = str(g)
    assert "  group g0 [out_fusable] {\n    %c = Conv(" in text
    assert g.groups[0].anchor.op == "Conv"
    assert pattern_of("Relu") < pattern_of("Add") < pattern_of("Reshape") < pattern_of("Conv")
    assert pattern_of("Softmax") is Pattern.OPAQUE


def test_fresh_names_do_not_collide():
    g = small_graph()
    assert g.fresh("c") == "c_1" and g.fresh("c") == "c_2" and g.fresh("new") == "new"
