"""`IndexingMap` itself: composition, emptiness, unused variables, simplification (cases from XLA's
indexing_map_test.cc, in MLIR's `floordiv` spelling) and the XLA one-line printer."""

from __future__ import annotations

import pytest

from hlo_mlir.analysis import IndexingMap, Interval, compose, format_xla, parse_indexing_map
from hlo_mlir.analysis import affine as A


def xla(text: str) -> str:
    return format_xla(parse_indexing_map(text), runtime_section=False)


def test_print_parse_round_trip() -> None:
    text = "(d0, d1)[s0, s1] -> (d1, d0, s1, s0), domain: d0 in [0, 3], d1 in [0, 3], s0 in [0, 1], s1 in [0, 1]"
    assert xla(text) == text
    assert format_xla(IndexingMap.undefined()) == "UNDEFINED\n"


def test_composition_with_constraints() -> None:
    producer = parse_indexing_map(
        "(d0, d1)[s0, s1] -> (d1, d0, s1, s0), domain: d0 in [0, 49], d1 in [0, 59], s0 in [0, 69], "
        "s1 in [0, 19], d0 mod 8 in [0, 0], s0 mod 3 in [1, 1]"
    )
    consumer = parse_indexing_map(
        "(d0)[s0] -> (d0, s0), domain: d0 in [0, 9], s0 in [0, 7], d0 + s0 in [0, 20], s0 mod 4 in [0, 0]"
    )
    composed = compose(consumer, producer)
    assert format_xla(composed) == (
        "(d0)[s0, s1, s2] -> (s2, d0, s1, s0), domain: d0 in [0, 9], s0 in [0, 69], s1 in [0, 19], s2 in [0, 7], "
        "d0 + s2 in [0, 20], d0 mod 8 in [0, 0], s0 mod 3 in [1, 1], s2 mod 4 in [0, 0]"
    )
    assert composed.simplify()
    assert format_xla(composed) == (
        "(d0)[s0, s1, s2] -> (s2, d0, s1, s0), domain: d0 in [0, 8], s0 in [1, 67], s1 in [0, 19], s2 in [0, 4], "
        "d0 mod 8 in [0, 0], s0 mod 3 in [1, 1], s2 mod 4 in [0, 0]"
    )


def test_composition_orders_range_before_runtime_variables() -> None:
    producer = parse_indexing_map(
        "(d0, d1, d2){rt0, rt1, rt2} -> (d0 + rt0, d1 + rt1, d2 + rt2), domain: d0 in [0, 0], d1 in [0, 1], "
        "d2 in [0, 226], rt0 in [0, 0], rt1 in [0, 1], rt2 in [0, 226]"
    )
    consumer = parse_indexing_map("(d0, d1)[s0] -> (0, d1, s0), domain: d0 in [0, 0], d1 in [0, 1], s0 in [0, 31]")
    assert format_xla(compose(consumer, producer), runtime_section=False) == (
        "(d0, d1)[s0]{rt0, rt1, rt2} -> (rt0, d1 + rt1, s0 + rt2), domain: d0 in [0, 0], d1 in [0, 1], "
        "s0 in [0, 31], rt0 in [0, 0], rt1 in [0, 1], rt2 in [0, 226]"
    )


@pytest.mark.parametrize(
    "text",
    [
        "(d0) -> (d0), domain: d0 in [10, 0]",
        "(d0) -> (d0), domain: d0 in [0, 49], 0 in [10, 15]",
    ],
)
def test_known_empty(text: str) -> None:
    m = parse_indexing_map(text)
    assert m.is_known_empty and format_xla(m) == "KNOWN EMPTY\n"
    other = parse_indexing_map("(d0) -> (d0), domain: d0 in [0, 49]")
    assert compose(other, m).is_known_empty and compose(m, other).is_known_empty
    assert len(compose(m, other).results) == 1


def test_known_empty_after_simplification() -> None:
    m = parse_indexing_map(
        "(d0, d1)[s0, s1] -> (d1, d0, s1), domain: d0 in [0, 49], d1 in [0, 59], s0 in [0, 69], s1 in [0, 19], "
        "s1 floordiv 20 in [2, 2]"
    )
    assert m.simplify() and m.is_known_empty


def test_remove_unused_symbols_keeps_runtime_variables_in_order() -> None:
    m = parse_indexing_map(
        "(d0)[s0, s1, s2]{rt0, rt1} -> (d0 * 4 + s1 + rt0 - 42), domain: d0 in [0, 31], s0 in [0, 0], "
        "s1 in [0, 1], s2 in [0, 2], rt0 in [0, 3], rt1 in [0, 4], d0 * 4 + s1 + rt0 in [24, 459]"
    )
    assert m.remove_unused_symbols() == [True, False, True, False, True]
    assert format_xla(m, runtime_section=False) == (
        "(d0)[s0]{rt0} -> (d0 * 4 + s0 + rt0 - 42), domain: d0 in [0, 31], s0 in [0, 1], rt0 in [0, 3], "
        "d0 * 4 + s0 + rt0 in [24, 459]"
    )


def test_remove_unused_vars() -> None:
    m = parse_indexing_map(
        "(d0, d1, d2, d3, d4)[s0, s1, s2] -> (s0 * 4 + d1 + d3 - 42), domain: d0 in [0, 0], d1 in [0, 1], "
        "d2 in [0, 2], d3 in [0, 3], d4 in [0, 4], s0 in [0, 31], s1 in [0, 63], s2 in [0, 95], "
        "s0 * 4 + d1 + d3 in [24, 459], s0 + s2 in [0, 512]"
    )
    assert m.remove_unused_vars() == [True, False, True, False, True, False, True, False]
    # Renumbering rebuilds the sums, and MLIR moves a dim before a symbol-only term.
    assert format_xla(m) == (
        "(d0, d1)[s0, s1] -> (d0 + s0 * 4 + d1 - 42), domain: d0 in [0, 1], d1 in [0, 3], s0 in [0, 31], "
        "s1 in [0, 95], d0 + s0 * 4 + d1 in [24, 459], s0 + s1 in [0, 512]"
    )


SIMPLIFICATIONS = [
    ("(d0) -> (d0), domain: d0 in [0, 99], d0 mod 8 + 5 in [6, 10]",
     "(d0) -> (d0), domain: d0 in [0, 99], d0 mod 8 in [1, 5]"),
    ("(d0) -> (d0), domain: d0 in [0, 99], d0 mod 8 + 5 in [50, 54]", "KNOWN EMPTY\n"),
    ("(d0)[s0, s1] -> (d0 * 6 + s0 * 3 + s1), domain: d0 in [0, 1999], s0 in [0, 1], s1 in [0, 2], "
     "d0 * 6 + s0 * 3 + s1 in [0, 599]",
     "(d0)[s0, s1] -> (d0 * 6 + s0 * 3 + s1), domain: d0 in [0, 99], s0 in [0, 1], s1 in [0, 2]"),
    ("(d0)[s0] -> (d0), domain: d0 in [0, 99], s0 in [-99, 99], s0 floordiv -3 in [-11, -5]",
     "(d0)[s0] -> (d0), domain: d0 in [0, 99], s0 in [15, 35]"),
    ("(d0)[s0] -> (d0), domain: d0 in [0, 99], s0 in [-99, 99], s0 * -3 in [-11, -5]",
     "(d0)[s0] -> (d0), domain: d0 in [0, 99], s0 in [2, 3]"),
    ("(d0)[s0, s1] -> (d0, s1, s0), domain: d0 in [0, 3], s0 in [-21, -2], s1 in [0, 10], d0 mod 3 in [0, 0], "
     "s0 mod 2 in [0, 0], s0 mod 3 in [0, 0], s1 mod 5 in [1, 1]",
     "(d0)[s0, s1] -> (d0, s1, s0), domain: d0 in [0, 3], s0 in [-18, -6], s1 in [1, 6], d0 mod 3 in [0, 0], "
     "s0 mod 6 in [0, 0], s1 mod 5 in [1, 1]"),
    ("(d0) -> (d0), domain: d0 in [5, 5]", "(d0) -> (5), domain: d0 in [5, 5]"),
    ("(d0, d1) -> (((d0 floordiv 3) * 3 + d1 floordiv 2) floordiv 6), domain: d0 in [0, 11], d1 in [0, 5]",
     "(d0, d1) -> (d0 floordiv 6), domain: d0 in [0, 11], d1 in [0, 5]"),
    ("(d0) -> (d0 mod 42), domain: d0 in [53, 71]", "(d0) -> (d0 - 42), domain: d0 in [53, 71]"),
    ("(d0) -> (d0 mod 5), domain: d0 in [-5, -1]", "(d0) -> (d0 + 5), domain: d0 in [-5, -1]"),
    ("(d0)[s0] -> (d0 - (s0 floordiv 3) * 3 + s0), domain: d0 in [0, 1], s0 in [0, 3]",
     "(d0)[s0] -> (d0 + s0 mod 3), domain: d0 in [0, 1], s0 in [0, 3]"),
    ("(d0, d1) -> (-((d0 * -11 - d1 + 109) floordiv 11) + 9, d0 * 11 + d1 + ((d0 * -11 - d1 + 109) floordiv 11) "
     "* 11 - 99), domain: d0 in [0, 7], d1 in [0, 8]",
     "(d0, d1) -> (d0, d1), domain: d0 in [0, 7], d1 in [0, 8]"),
    ("()[s0] -> ((s0 * 128) mod 715 + ((s0 * 128) floordiv 715) * 715), domain: s0 in [0, 127]",
     "()[s0] -> (s0 * 128), domain: s0 in [0, 127]"),
    ("(d0, d1) -> ((d0 mod 8) * 128 + d1 + (d0 floordiv 8) * 1024), domain: d0 in [0, 1023], d1 in [0, 127]",
     "(d0, d1) -> (d0 * 128 + d1), domain: d0 in [0, 1023], d1 in [0, 127]"),
    ("(d0, d1) -> (((d1 * 2 + d0 floordiv 64) mod 3) * 256 + (d0 mod 64) * 4 + ((d1 * 128 + d0) floordiv 192) "
     "* 768), domain: d0 in [0, 127], d1 in [0, 3071]",
     "(d0, d1) -> (d0 * 4 + d1 * 512), domain: d0 in [0, 127], d1 in [0, 3071]"),
    ("(d0) -> ((d0 * -1) mod 2), domain: d0 in [0, 127]", "(d0) -> ((-d0) mod 2), domain: d0 in [0, 127]"),
    ("()[s0] -> (s0 - ((s0 floordiv 2) floordiv 7) * 14 + (s0 floordiv 14) * 14), domain: s0 in [0, 1233]",
     "()[s0] -> (s0), domain: s0 in [0, 1233]"),
    ("(d0, d1) -> ((d0 * 2 + d1) mod 2), domain: d0 in [0, 99], d1 in [0, 99]",
     "(d0, d1) -> (d1 mod 2), domain: d0 in [0, 99], d1 in [0, 99]"),
    ("()[s0, s1] -> ((s0 * 2 + s1 floordiv 64) floordiv 3), domain: s0 in [0, 1233], s1 in [0, 127]",
     "()[s0, s1] -> ((s0 * 128 + s1) floordiv 192), domain: s0 in [0, 1233], s1 in [0, 127]"),
    ("()[s0] -> ((s0 * 6 + 9) floordiv 18), domain: s0 in [0, 1233]",
     "()[s0] -> ((s0 * 2 + 3) floordiv 6), domain: s0 in [0, 1233]"),
    ("()[s0] -> ((s0 * 16 - 497) floordiv 512), domain: s0 in [0, 4]", "()[s0] -> (-1), domain: s0 in [0, 4]"),
    ("()[s0] -> (-(s0 floordiv 144) + (s0 * 32 + 4639) floordiv 4608), domain: s0 in [0, 10000]",
     "()[s0] -> (1), domain: s0 in [0, 10000]"),
    ("()[s0, s1, s2, s3] -> ((s0 * 458752 + s1 + s2 * 4 + s3 * 512) mod 20000), domain: s0 in [0, 871], "
     "s1 in [0, 3], s2 in [0, 127], s3 in [0, 895]",
     "()[s0, s1, s2, s3] -> (((s0 * 114688 + s3 * 128 + s2) mod 5000) * 4 + s1), domain: s0 in [0, 871], "
     "s1 in [0, 3], s2 in [0, 127], s3 in [0, 895]"),
    ("()[s0, s1] -> ((s0 * 16 - (s1 floordiv 4) floordiv 2 + (s1 floordiv 8) * 2) floordiv 4), "
     "domain: s0 in [0, 1], s1 in [0, 127]",
     "()[s0, s1] -> (s0 * 4 + s1 floordiv 32), domain: s0 in [0, 1], s1 in [0, 127]"),
]


@pytest.mark.parametrize("before, after", SIMPLIFICATIONS)
def test_simplify(before: str, after: str) -> None:
    m = parse_indexing_map(before)
    m.simplify()
    assert format_xla(m) == after
    assert not m.copy().simplify() or m.is_known_empty, "simplification is idempotent"


@pytest.mark.parametrize(
    "text",
    [
        "()[s0, s1] -> ((s0 floordiv 3 + s1 floordiv 3) floordiv 6), domain: s0 in [0, 1233], s1 in [0, 127]",
        "()[s0] -> ((s0 floordiv 2) floordiv -7), domain: s0 in [0, 1233]",
        "(d0) -> (d0 mod 5), domain: d0 in [-4, 0]",
    ],
)
def test_unsound_rewrites_are_not_applied(text: str) -> None:
    assert not parse_indexing_map(text).simplify()


def test_preserve_point_dims() -> None:
    m = parse_indexing_map("(d0) -> (d0), domain: d0 in [5, 5]")
    assert not m.simplify(preserve_point_dims=True)


def test_equality_ignores_names_and_is_hashable() -> None:
    a = parse_indexing_map("(d0)[s0] -> (d0 + s0), domain: d0 in [0, 3], s0 in [0, 1]")
    b = parse_indexing_map("(x)[y] -> (x + y), domain: x in [0, 3], y in [0, 1]")
    assert a == b and len({a, b}) == 1
    assert a != parse_indexing_map("(d0)[s0] -> (d0 + s0), domain: d0 in [0, 4], s0 in [0, 1]")


def test_inverse_of_strided_map() -> None:
    m = IndexingMap.from_tensor_sizes(A.affine_map(1, 0, [A.dim(0) * 3 + 2]), [4])
    inverse = m.inverse()
    assert format_xla(inverse) == "(d0) -> ((d0 - 2) floordiv 3), domain: d0 in [2, 11], (d0 - 2) mod 3 in [0, 0]"
    assert inverse.constraints_satisfied((5,), ()) and not inverse.constraints_satisfied((6,), ())
    assert Interval(2, 11).contains(inverse.dim_vars[0].bounds)
