"""Decoded forms of structured HLO attributes (what passes and the interpreter read).

The MLIR encodings and the text forms live in hlo_mlir.dialects.attributes; these are the
plain Python values they decode to, with XLA's defaults already filled in.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Window:
    """`window={size=.. stride=.. pad=lo_hi.. lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}`."""

    size: tuple[int, ...]
    stride: tuple[int, ...]
    pad_low: tuple[int, ...]
    pad_high: tuple[int, ...]
    lhs_dilate: tuple[int, ...]
    rhs_dilate: tuple[int, ...]
    reversal: tuple[bool, ...]

    @property
    def rank(self) -> int:
        return len(self.size)

    @staticmethod
    def default(size: tuple[int, ...]) -> "Window":
        n = len(size)
        return Window(size, (1,) * n, (0,) * n, (0,) * n, (1,) * n, (1,) * n, (False,) * n)


@dataclass(frozen=True)
class ConvDims:
    """Convolution dimension numbers, decoded from `dim_labels=b01f_01io->b01f`."""

    input_batch: int
    input_feature: int
    input_spatial: tuple[int, ...]
    kernel_input_feature: int
    kernel_output_feature: int
    kernel_spatial: tuple[int, ...]
    output_batch: int
    output_feature: int
    output_spatial: tuple[int, ...]
