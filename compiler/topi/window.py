"""Padding and output-size arithmetic shared by convolution and pooling."""

from __future__ import annotations

from typing import Any

from ..errors import OperatorError


def get_pad_tuple(padding: Any, kernel: tuple[int, int]) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from an int, (h, w), (t, l, b, r), "SAME" or "VALID"."""
    if isinstance(padding, str):
        if padding.upper() == "VALID":
            return 0, 0, 0, 0
        if padding.upper() != "SAME":
            raise OperatorError(f"padding {padding!r}: expected 'SAME', 'VALID' or integers")
        ph, pw = kernel[0] - 1, kernel[1] - 1
        return ph // 2, pw // 2, ph - ph // 2, pw - pw // 2
    if isinstance(padding, int):
        return (padding,) * 4
    pads = tuple(int(p) for p in padding)
    if len(pads) == 2:
        return pads[0], pads[1], pads[0], pads[1]
    if len(pads) == 4:
        return pads  # type: ignore[return-value]
    raise OperatorError(f"padding {padding!r}: expected 1, 2 or 4 integers")


def pair(x: int | tuple[int, int]) -> tuple[int, int]:
    return (x, x) if isinstance(x, int) else (int(x[0]), int(x[1]))


def out_size(size: int, kernel: int, stride: int, dilation: int, pad_total: int) -> int:
    """Output extent of a sliding window along one axis."""
    return (size + pad_total - (kernel - 1) * dilation - 1) // stride + 1
