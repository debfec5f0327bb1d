"""JIT vs interpreter vs XLA on complex dot, reduce, reduce-window and select-and-scatter.

dot accumulates `acc + a*b` (textbook product) in the result type, row-major over the contracting
loops; the interpreter's matmul is BLAS and XLA's is its own, so dots compare within a tolerance.
Reducers are the computations inlined as scalar code: a sequential fold from the init value in
row-major order of the reduced dims, checked bit for bit against a NumPy fold. The
interpreter means to fold complex add/multiply that way too, but NumPy sums its column-major copies
pairwise, multiplies with a fused multiply-add where the machine has one, and folds other
computations as a tree: reduce compares with it within a tolerance, or not at all for a
non-associative reducer.
"""

from __future__ import annotations

from typing import Callable

import hlo_mlir
import numpy as np
import pytest
from hlo_mlir.interpreter.contraction import complex_multiply
from interp_fakes import xla
from jax import lax
from jit_helpers import check
from xla_compare import assert_outputs

RNG = np.random.default_rng(11)
DT = {"c64": np.complex64, "c128": np.complex128}
# Complex edge values: infinite and NaN parts, signed zeros, huge parts whose product overflows.
SPECIAL = np.array([complex(np.inf, 0), complex(0, -np.inf), complex(np.nan, 1), complex(1, np.nan),
                    complex(-0.0, -0.0), complex(-0.0, 0.0), 1e30 + 1e30j, complex(-np.inf, np.inf)], np.complex128)
C_FINITE = np.array([1 + 2j, -3 + 0.5j, 0.25 - 1j, 2 - 1j, -0.5 - 0.5j, 0.1 + 3j, -2 - 0.1j, 1.5 + 0j])


def assert_same_bits(got: np.ndarray, want: np.ndarray) -> None:
    """Bit-identical parts, except that NaN parts only have to be NaN on both sides (their sign and
    payload come from whichever operand the hardware propagates)."""
    g, w = (np.atleast_1d(a).view(np.asarray(a).real.dtype) for a in (got, want))
    nan = np.isnan(g)
    assert (nan == np.isnan(w)).all(), (got, want)
    assert g[~nan].tobytes() == w[~nan].tobytes(), (got, want)


def rand(ty: str, *shape: int) -> np.ndarray:
    return (RNG.uniform(-2, 2, shape) + 1j * RNG.uniform(-2, 2, shape)).astype(DT[ty])


def shape_text(ty: str, shape: tuple) -> str:
    return f"{ty}[{','.join(map(str, shape))}]"


# --- dot ------------------------------------------------------------------------------------------

DOTS = [  # lhs shape, rhs shape, result shape, dimension attributes
    ((3, 5), (5, 4), (3, 4), "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
    ((16,), (16,), (), "lhs_contracting_dims={0}, rhs_contracting_dims={0}"),  # the corpus's vdot
    ((2, 3, 5), (2, 5, 4), (2, 3, 4),
     "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}"),
    ((4, 3, 2), (2, 3, 6), (4, 6), "lhs_contracting_dims={1,2}, rhs_contracting_dims={1,0}"),
    ((3, 0), (0, 2), (3, 2), "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),  # empty sum: 0 + 0i
]


def dot_text(lt: str, rt: str, ot: str, ls: tuple, rs: tuple, os_: tuple, dims: str) -> str:
    return f"""HloModule m
ENTRY e {{
  a = {shape_text(lt, ls)} parameter(0)
  b = {shape_text(rt, rs)} parameter(1)
  ROOT d = {shape_text(ot, os_)} dot(a, b), {dims}
}}
"""


@pytest.mark.parametrize("ty", ["c64", "c128"])
@pytest.mark.parametrize("ls,rs,os_,dims", DOTS)
def test_dot(ty: str, ls: tuple, rs: tuple, os_: tuple, dims: str) -> None:
    tol = 1e-5 if ty == "c64" else 1e-13
    check(dot_text(ty, ty, ty, ls, rs, os_, dims), rand(ty, *ls), rand(ty, *rs), tol=tol, xla_tol=tol)


def test_dot_real_operand_complex_result() -> None:
    """A real operand is converted to the complex result type (imaginary part 0) before multiplying."""
    a = RNG.uniform(-2, 2, (3, 5)).astype(np.float32)
    check(dot_text("f32", "c64", "c64", (3, 5), (5, 4), (3, 4), DOTS[0][3]), a, rand("c64", 5, 4),
          tol=1e-5, xla_tol=1e-5)


@pytest.mark.parametrize("ty", ["c64", "c128"])
def test_dot_special_values(ty: str) -> None:
    """One special value per row of `a` against a finite `b`, with single-term sums: no reordering,
    so the textbook product's inf/NaN parts are exactly the interpreter's. XLA rewrites a size-1
    contraction into a plain multiply, so its -0 products stay -0 where the sum from +0 gives +0:
    compared within a tolerance, which equates signed zeros but not inf/NaN positions."""
    a = SPECIAL.astype(DT[ty]).reshape(8, 1)
    b = np.array([[1 + 1j, 2 - 0.5j, -1 + 0j, 0 + 1j]], DT[ty])
    with np.errstate(invalid="ignore"):  # the interpreter's matmul of inf parts
        check(dot_text(ty, ty, ty, (8, 1), (1, 4), (8, 4), DOTS[0][3]), a, b, xla_tol=1e-30)


@pytest.mark.parametrize("lt,rt,ot", [("c64", "c64", "f32"), ("c64", "f32", "f32"), ("c128", "c128", "f64"),
                                      ("c64", "f32", "bf16"), ("c64", "c64", "s32")])
def test_dot_complex_operands_real_result(lt: str, rt: str, ot: str) -> None:
    """XLA sums the complex products and keeps the real part (truncated for an integer result)."""
    tol = 1e-2 if ot == "bf16" else 1e-5
    a = rand(lt, 3, 5) if lt[0] == "c" else RNG.uniform(-2, 2, (3, 5)).astype(np.float32)
    b = rand(rt, 5, 4) if rt[0] == "c" else RNG.uniform(-2, 2, (5, 4)).astype(np.float32)
    if ot == "s32":
        a, b = ((x * 8).round().astype(x.dtype) for x in (a, b))
    check(dot_text(lt, rt, ot, (3, 5), (5, 4), (3, 4), DOTS[0][3]), a, b, tol=0 if ot == "s32" else tol,
          xla_tol=0 if ot == "s32" else tol)


# --- reduce ---------------------------------------------------------------------------------------

def reducer(name: str, body: str, ty: str) -> str:
    return f"""{name} {{
  a = {ty}[] parameter(0)
  b = {ty}[] parameter(1)
  {body}
}}
"""


ADD = "ROOT r = {ty}[] add(a, b)"
MUL = "ROOT r = {ty}[] multiply(a, b)"
# A computation no binary-reducer shortcut applies to: a*b + a (order-sensitive, not associative).
GENERAL = "m = {ty}[] multiply(a, b)\n  ROOT r = {ty}[] add(m, a)"


def reduce_text(body: str, ty: str, shape: tuple, dims: tuple, init: str) -> str:
    out = tuple(n for d, n in enumerate(shape) if d not in dims)
    return f"""HloModule m
{reducer("red", body.format(ty=ty), ty)}
ENTRY e {{
  x = {shape_text(ty, shape)} parameter(0)
  z = {ty}[] constant({init})
  ROOT r = {shape_text(ty, out)} reduce(x, z), dimensions={{{",".join(map(str, dims))}}}, to_apply=red
}}
"""


def fold(fn: Callable[[np.ndarray, np.ndarray], np.ndarray], x: np.ndarray, dims: tuple, init: complex) -> np.ndarray:
    """`fn(...fn(fn(init, x0), x1)..., xn)` over the reduced dims in row-major order, per kept index."""
    keep = [d for d in range(x.ndim) if d not in dims]
    rows = x.transpose(*dims, *keep).reshape(-1, *[x.shape[d] for d in keep])
    acc = np.full(rows.shape[1:], init, x.dtype)
    for r in rows:
        acc = fn(acc, r).astype(x.dtype)
    return acc


def cmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The product as XLA:CPU computes it, one fused multiply-add per part (NumPy fuses the other product;
    the JIT's llc -fp-contract=fast and the interpreter fuse XLA's: interpreter.contraction)."""
    return complex_multiply(a, b)


FOLDS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    ADD: np.add, MUL: cmul, GENERAL: lambda a, b: cmul(a, b) + a}


@pytest.mark.parametrize("ty", ["c64", "c128"])
@pytest.mark.parametrize("dims", [(0,), (1,), (2,), (0, 2), (0, 1, 2)])
@pytest.mark.parametrize("body,init", [(ADD, 0.5 - 1j), (MUL, 1 + 0j), (GENERAL, 1j)])
def test_reduce(ty: str, dims: tuple, body: str, init: complex) -> None:
    x = rand(ty, 3, 4, 5) * 0.6  # products of up to 60 factors stay finite and normal
    tol = 1e-5 if ty == "c64" else 1e-13
    text = reduce_text(body, ty, (3, 4, 5), dims, f"({init.real}, {init.imag})")
    got = check(text, x, tol=tol, xla_tol=tol, interp=body != GENERAL)
    if body == ADD:
        assert_same_bits(got[0], fold(FOLDS[body], x, dims, init))
    else:  # which products LLVM fuses into FMAs (as XLA's LLVM does) depends on the loop around them
        assert_outputs(got, [fold(FOLDS[body], x, dims, init)], tol)


@pytest.mark.parametrize("body,init", [(ADD, complex(-0.0, -0.0)), (MUL, 1 + 0j)])
def test_reduce_special_values(body: str, init: complex) -> None:
    """inf/NaN parts and signed zeros, each row summed/multiplied sequentially from the init. (The
    interpreter's pairwise sum starts from +0: a tolerance, which equates signed zeros but not
    inf/NaN positions; so does XLA, whose NaN signs differ.)"""
    x = np.stack([SPECIAL, np.roll(SPECIAL, 3), np.full(8, complex(-0.0, -0.0)), SPECIAL[::-1]]).astype(np.complex64)
    text = reduce_text(body, "c64", (4, 8), (1,), f"({init.real}, {init.imag})")
    with np.errstate(invalid="ignore", over="ignore"):
        got = check(text, x, tol=1e-30, xla_tol=1e-30)
        assert_same_bits(got[0], fold(FOLDS[body], x, (1,), init))


def test_reduce_with_a_complex_constant() -> None:
    """A complex constant inside the reducer (scalar code: one complex.constant). a + b*k is not
    associative: checked against the sequential fold, and XLA's, not the interpreter's tree."""
    body = "k = {ty}[] constant((0.5, -1))\n  m = {ty}[] multiply(b, k)\n  ROOT r = {ty}[] add(a, m)"
    x = rand("c64", 3, 4, 5)
    got = check(reduce_text(body, "c64", (3, 4, 5), (1,), "(1, 2)"), x, xla_tol=1e-5, interp=False)
    k = np.complex64(0.5 - 1j)
    assert_same_bits(got[0], fold(lambda a, b: a + cmul(b, np.full_like(b, k)), x, (1,), 1 + 2j))


def test_reduce_variadic_complex_and_index() -> None:
    """(value, index) of the complex element with the largest real part, first one on ties."""
    text = """HloModule m
pick {
  av = c64[] parameter(0)
  ai = s32[] parameter(1)
  bv = c64[] parameter(2)
  bi = s32[] parameter(3)
  ar = f32[] real(av)
  br = f32[] real(bv)
  keep = pred[] compare(ar, br), direction=GE
  v = c64[] select(keep, av, bv)
  i = s32[] select(keep, ai, bi)
  ROOT t = (c64[], s32[]) tuple(v, i)
}
ENTRY e {
  x = c64[4,6] parameter(0)
  i = s32[4,6] iota(), iota_dimension=1
  z = c64[] constant((-inf, 0))
  m1 = s32[] constant(-1)
  ROOT r = (c64[4], s32[4]) reduce(x, i, z, m1), dimensions={1}, to_apply=pick
}
"""
    x = (RNG.integers(0, 3, (4, 6)) + 1j * RNG.integers(0, 3, (4, 6))).astype(np.complex64)
    check(text, x)


# --- reduce-window and select-and-scatter ----------------------------------------------------------

WINDOWS = [
    ((4, 6), (3, 5), "size=2x2"),                                   # read through an affine map
    ((4, 6), (4, 6), "size=3x3 pad=1_1x1_1"),                       # padding: positions computed
    ((5, 7), (2, 6), "size=3x2 stride=2x2 pad=1_0x0_0 lhs_dilate=1x2 rhs_dilate=1x2"),
]


@pytest.mark.parametrize("ty", ["c64", "c128"])
@pytest.mark.parametrize("shape,out,window", WINDOWS)
@pytest.mark.parametrize("body,init", [(ADD, "(0, 0)"), (MUL, "(1, 0)")])
def test_reduce_window(ty: str, shape: tuple, out: tuple, window: str, body: str, init: str) -> None:
    text = f"""HloModule m
{reducer("red", body.format(ty=ty), ty)}
ENTRY e {{
  x = {shape_text(ty, shape)} parameter(0)
  z = {ty}[] constant({init})
  ROOT r = {shape_text(ty, out)} reduce-window(x, z), window={{{window}}}, to_apply=red
}}
"""
    tol = 1e-5 if ty == "c64" else 1e-13
    check(text, rand(ty, *shape), tol=tol if body == MUL else 0.0, xla_tol=tol)


def test_reduce_window_special_values() -> None:
    """Sums from -0 - 0i of windows holding inf/NaN parts and signed zeros: bit-identical everywhere."""
    x = np.stack([SPECIAL, SPECIAL[::-1], np.roll(SPECIAL, 2)]).astype(np.complex64)
    text = f"""HloModule m
{reducer("red", ADD.format(ty="c64"), "c64")}
ENTRY e {{
  x = c64[3,8] parameter(0)
  z = c64[] constant((-0, -0))
  ROOT r = c64[2,7] reduce-window(x, z), window={{size=2x2}}, to_apply=red
}}
"""
    with np.errstate(invalid="ignore"):
        check(text, x)


def test_select_and_scatter() -> None:
    """Select by the larger real part (first wins ties), scatter-add the complex source."""
    text = f"""HloModule m
sel {{
  a = c64[] parameter(0)
  b = c64[] parameter(1)
  ra = f32[] real(a)
  rb = f32[] real(b)
  ROOT s = pred[] compare(ra, rb), direction=GE
}}
{reducer("sc", ADD.format(ty="c64"), "c64")}
ENTRY e {{
  x = c64[6,6] parameter(0)
  s = c64[3,3] parameter(1)
  z = c64[] constant((0, 0))
  ROOT r = c64[6,6] select-and-scatter(x, s, z), window={{size=2x2 stride=2x2}}, select=sel, scatter=sc
}}
"""
    x = (RNG.permutation(36).reshape(6, 6) + 1j * RNG.uniform(-1, 1, (6, 6))).astype(np.complex64)
    check(text, x, rand("c64", 3, 3))


# --- sqrt, sinh/cosh and the inverse trigonometric/hyperbolic functions -----------------------------

# Both sides of every branch cut (the sign of a zero part picks it), large and small magnitudes.
CUTS = np.array([complex(2, 0.0), complex(2, -0.0), complex(-2, 0.0), complex(-2, -0.0), complex(0.0, 2),
                 complex(-0.0, 2), complex(0.0, -2), complex(-0.0, -2), complex(0.5, 0.0), complex(0.5, -0.0),
                 complex(-0.0, 0.5), complex(0.0, 0.0), complex(-0.0, -0.0), complex(1, 0.0), complex(-1, -0.0)])
FAR = np.array([1e10 + 1e10j, -1e10 + 3j, 3 - 1e10j, 1e30 + 1e30j, -20 + 1j, 20 - 3j, 1e-3 + 1e-3j, -0.7 + 1e-4j])
INVERSE = {"asin": lax.asin, "acos": lax.acos, "atan": lax.atan, "asinh": lax.asinh, "acosh": lax.acosh,
           "atanh": lax.atanh, "sinh": lax.sinh, "cosh": lax.cosh}


def unary_text(op: str, ty: str, n: int) -> str:
    return f"HloModule m\nENTRY e {{\n  a = {ty}[{n}] parameter(0)\n  ROOT r = {ty}[{n}] {op}(a)\n}}\n"


@pytest.mark.parametrize("ty", ["c64", "c128"])
@pytest.mark.parametrize("op", list(INVERSE))
def test_inverse_trig_hyperbolic(op: str, ty: str) -> None:
    """Kahan's formulas (sinh/cosh from the parts): the interpreter's C99 values within rounding, on the
    side of each branch cut that the sign of a zero part picks. XLA takes no opcode of these from HLO
    text; through jax.lax it agrees off the cuts (its decompositions ignore the sign of zero there)."""
    tol = 2e-6 if ty == "c64" else 1e-14
    far = FAR if op not in ("sinh", "cosh") else FAR[4:]  # sinh/cosh of 1e10 overflow
    x = np.concatenate([C_FINITE, CUTS, far]).astype(DT[ty])
    with np.errstate(all="ignore"):
        check(unary_text(op, ty, x.size), x, tol=tol, xla=False)
        off_cuts = np.concatenate([C_FINITE, far]).astype(DT[ty])
        got = hlo_mlir.load(unary_text(op, ty, off_cuts.size)).run(off_cuts, backend="jit")
    assert_outputs(got, [xla(INVERSE[op], off_cuts)], tol * 5)


def test_sqrt_is_exact_where_the_root_is() -> None:
    """C's csqrt, not the complex dialect's polar form (whose sqrt(-4) has real part -8.7e-8), bit for bit
    the interpreter's here. (XLA ignores the sign of a zero imaginary part and flushes subnormals.)"""
    x = np.array([-4 + 0j, complex(-4, -0.0), 4 + 0j, 2j, 3 + 4j, -3 + 4j, complex(-0.0, -0.0), 1e-45j, 3e38 + 3e38j],
                 np.complex64)
    got = check(unary_text("sqrt", "c64", x.size), x, xla=False, denormals="keep")[0]  # IEEE: 1e-45j kept
    assert got[:6].tolist() == [2j, -2j, 2 + 0j, 1 + 1j, 2 + 1j, 1 + 2j]
