"""Graph passes over the IR (`compiler.graph.ir`), each returning the graph it was given."""
