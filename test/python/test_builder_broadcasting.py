"""Every example of XLA's broadcasting document, built with the builder and run, with its numbers;
every invalid case of the document an HloError at the call site."""

from __future__ import annotations

import numpy as np
import pytest

import hlo_mlir
from hlo_mlir import builder as xb
from hlo_mlir.builder.broadcasting import BroadcastError, broadcast_shape

F32 = np.float32


def run_add(lhs: np.ndarray, rhs: np.ndarray, broadcast_dimensions: tuple[int, ...] = ()) -> np.ndarray:
    """lhs + rhs with the builder's broadcasting, as a module: build, print, re-parse, run."""
    b = xb.Builder("bcast")
    x = b.parameter(0, f"f32[{','.join(map(str, lhs.shape))}]", "lhs")
    y = b.parameter(1, f"f32[{','.join(map(str, rhs.shape))}]", "rhs")
    module = b.build(xb.add(x, y, broadcast_dimensions))
    (built,) = module.run(lhs.astype(F32), rhs.astype(F32))
    (reparsed,) = hlo_mlir.load(module.to_hlo()).run(lhs.astype(F32), rhs.astype(F32))
    np.testing.assert_array_equal(built, reparsed)
    return built


MATRIX = np.array([[1, 2, 3], [4, 5, 6]], F32)


def test_matrix_plus_vector() -> None:
    out = run_add(MATRIX, np.array([7, 8, 9], F32), (1,))
    np.testing.assert_array_equal(out, [[8, 10, 12], [11, 13, 15]])


def test_matrix_plus_scalar_needs_no_dimensions() -> None:
    out = run_add(MATRIX, np.array(7, F32))
    np.testing.assert_array_equal(out, [[8, 9, 10], [11, 12, 13]])
    b = xb.Builder("scalar_operator")
    x = b.parameter(0, "f32[2,3]")
    (out,) = b.build(x + 7).run(MATRIX)
    np.testing.assert_array_equal(out, [[8, 9, 10], [11, 12, 13]])


def test_matrix_plus_vector_without_dimensions_is_invalid() -> None:
    b = xb.Builder("m")
    x, v = b.parameter(0, "f32[2,3]"), b.parameter(1, "f32[3]")
    with pytest.raises(hlo_mlir.HloError, match="add: operands of rank 2 .* need broadcast_dimensions"):
        xb.add(x, v)
    with pytest.raises(hlo_mlir.HloError, match="add: .*need broadcast_dimensions"):
        x + v  # operators follow XLA, not NumPy's rank promotion


def test_vector_to_3x3_along_either_dimension() -> None:
    zeros, v = np.zeros((3, 3), F32), np.array([7, 8, 9], F32)
    np.testing.assert_array_equal(run_add(zeros, v, (1,)), [[7, 8, 9], [7, 8, 9], [7, 8, 9]])
    np.testing.assert_array_equal(run_add(zeros, v, (0,)), [[7, 7, 7], [8, 8, 8], [9, 9, 9]])


def test_matrix_into_cuboid_with_tuple() -> None:
    cube = np.arange(24, dtype=F32).reshape(2, 3, 4)
    m = np.arange(12, dtype=F32).reshape(3, 4) * 100
    np.testing.assert_array_equal(run_add(cube, m, (1, 2)), cube + m[None, :, :])


@pytest.mark.parametrize("dim", [0, 1, 2, 3])
def test_vector_to_each_dimension_of_mxnxpxq(dim: int) -> None:
    dims = (2, 3, 4, 5)
    big = np.zeros(dims, F32)
    t = np.arange(1, dims[dim] + 1, dtype=F32)
    expected = np.broadcast_to(t.reshape([-1 if i == dim else 1 for i in range(4)]), dims)
    np.testing.assert_array_equal(run_add(big, t, (dim,)), expected)


@pytest.mark.parametrize("bd", [(2, 3), (1, 2), (0, 3)])
def test_txv_matrix_to_mxnxpxq(bd: tuple[int, int]) -> None:
    dims = (2, 3, 4, 5)
    big = np.zeros(dims, F32)
    tv = np.arange(dims[bd[0]] * dims[bd[1]], dtype=F32).reshape(dims[bd[0]], dims[bd[1]])
    expected = np.broadcast_to(tv.reshape([dims[i] if i in bd else 1 for i in range(4)]), dims)
    np.testing.assert_array_equal(run_add(big, tv, bd), expected)


def test_non_increasing_broadcast_dimensions_are_invalid() -> None:
    """Matching V to N and T to P is not allowed: the tuple must be increasing."""
    b = xb.Builder("m")
    big, tv = b.parameter(0, "f32[2,3,3,5]"), b.parameter(1, "f32[3,3]")
    with pytest.raises(hlo_mlir.HloError, match=r"add: broadcast_dimensions \(2,1\) must be strictly increasing"):
        xb.add(big, tv, (2, 1))


def test_broadcast_dimensions_must_match_sizes() -> None:
    b = xb.Builder("m")
    x, v = b.parameter(0, "f32[2,3]"), b.parameter(1, "f32[3]")
    with pytest.raises(hlo_mlir.HloError, match="add: dimension 0 of size 3 of .* does not match dimension 0 "
                                                "of size 2"):
        xb.add(x, v, (0,))
    with pytest.raises(hlo_mlir.HloError, match="one entry per dimension"):
        xb.add(x, v, (0, 1))
    with pytest.raises(hlo_mlir.HloError, match="out of range"):
        xb.add(x, v, (2,))


@pytest.mark.parametrize("lhs,rhs,out", [
    ((2, 1), (2, 3), (2, 3)),
    ((1, 2, 5), (7, 2, 5), (7, 2, 5)),
    ((7, 2, 5), (7, 1, 5), (7, 2, 5)),
    ((2, 1), (1, 3), (2, 3)),  # the "outer operation"
])
def test_degenerate_dimensions(lhs: tuple[int, ...], rhs: tuple[int, ...], out: tuple[int, ...]) -> None:
    a = np.arange(np.prod(lhs), dtype=F32).reshape(lhs)
    c = np.arange(np.prod(rhs), dtype=F32).reshape(rhs) * 10
    result = run_add(a, c)
    assert result.shape == out
    np.testing.assert_array_equal(result, a + c)


def test_outer_product_numbers() -> None:
    col, row = np.array([[1], [2]], F32), np.array([[10, 20, 30]], F32)
    np.testing.assert_array_equal(run_add(col, row), [[11, 21, 31], [12, 22, 32]])


def test_incompatible_same_rank_shapes_are_invalid() -> None:
    b = xb.Builder("m")
    x, y = b.parameter(0, "f32[7,2,5]"), b.parameter(1, "f32[7,2,6]")
    with pytest.raises(hlo_mlir.HloError) as e:
        x + y
    assert "add: shapes (7,2,5) and (7,2,6) are not compatible: dimension 2 has sizes 5 and 6" in str(e.value)
    assert e.value.loc is not None and e.value.loc.file == __file__
    assert "x + y" in str(e.value)  # the user's source line under the message


def test_vector_plus_1x2_matrix_with_dimension_0() -> None:
    out = run_add(np.array([1, 2, 3, 4], F32), np.array([[5, 6]], F32), (0,))
    np.testing.assert_array_equal(out, [[6, 7], [7, 8], [8, 9], [9, 10]])


def test_1x2_matrix_into_4x3x1_with_dimensions_1_2() -> None:
    big = np.arange(12, dtype=F32).reshape(4, 3, 1)
    small = np.array([[5, 6]], F32)
    out = run_add(small, big, (1, 2))
    assert out.shape == (4, 3, 2)
    np.testing.assert_array_equal(out, big + small[None, :, :])


def test_emitted_ops_are_explicit() -> None:
    """HLO is explicit: a degenerate dimension that grows is reshaped away, then broadcast."""
    b = xb.Builder("m")
    v, m = b.parameter(0, "f32[4]", "v"), b.parameter(1, "f32[1,2]", "m")
    text = b.build(xb.add(v, m, (0,))).to_hlo()
    assert "f32[4,2] broadcast(f32[4] %v), dimensions={0}" in text
    assert "f32[2] reshape(f32[1,2] %m)" in text
    assert "f32[4,2] broadcast(f32[2] %reshape" in text


def test_broadcast_shape_function() -> None:
    assert broadcast_shape((4,), (1, 2), (0,)) == ((4, 2), (0,), (0, 1))
    assert broadcast_shape((1, 2), (4, 3, 1), (1, 2)) == ((4, 3, 2), (1, 2), (0, 1, 2))
    with pytest.raises(BroadcastError, match="identity"):
        broadcast_shape((2, 3), (2, 3), (1, 0))


def test_comparison_operators_broadcast_too() -> None:
    b = xb.Builder("cmp")
    x = b.parameter(0, "s32[2,3]")
    (out,) = b.build(x > 2).run(np.array([[1, 2, 3], [4, 5, 6]], np.int32))
    np.testing.assert_array_equal(out, [[False, False, True], [True, True, True]])
