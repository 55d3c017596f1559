"""The compiler's and the ONNX importer's fuzzers draw a fixed sequence of inputs, so every run
(CI's included) is reproducible; given --hypothesis-seed=N they explore the inputs that seed
draws instead (a rerun with the same N draws them again)."""

import pytest


@pytest.fixture(scope="session")
def derandomize(request) -> bool:
    """Whether the fuzzers draw their fixed sequence (no --hypothesis-seed given)."""
    return request.config.getoption("hypothesis_seed") is None
