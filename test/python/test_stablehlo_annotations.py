"""Custom calls of JAX's sharded and callback-using dumps: Shardy's annotations are the identity on one
device (interpreter and JIT); a Python callback says it is not in the dump and how to run the module anyway.
"""

from __future__ import annotations

import hlo_mlir
import numpy as np
import pytest
from hlo_mlir.interpreter import register_custom_call
from hlo_mlir.interpreter.ops_control import CUSTOM_CALLS

SDY = """HloModule jit_f, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=1]>}}

ENTRY main.1 {
  a.1 = f32[8]{0} parameter(0), sharding={replicated}
  g = f32[8]{0} custom-call(a.1), custom_call_target="xla.sdy.GlobalToLocalShape"
  sin.1 = f32[8]{0} sine(g)
  l = f32[8]{0} custom-call(sin.1), custom_call_target="xla.sdy.LocalToGlobalShape"
  ROOT r = f32[8]{0} custom-call(l), custom_call_target="xla.sdy.FuncResultSharding", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@mesh, [{\\"x\\"}]>]>"}
}
"""

CALLBACK = """HloModule jit__lambda

ENTRY main.1 {
  Arg_0.1 = f32[4]{0} parameter(0)
  custom-call.1 = () custom-call(Arg_0.1), custom_call_target="xla_ffi_python_cpu_callback", custom_call_has_side_effect=true, api_version=API_VERSION_TYPED_FFI, backend_config={index = 0 : ui64}
  ROOT multiply.1 = f32[4]{0} multiply(Arg_0.1, Arg_0.1)
}
"""


@pytest.mark.parametrize("backend", ["interpreter", "jit"])
def test_shardy_annotations_are_the_identity_on_one_device(backend: str) -> None:
    x = np.linspace(-2, 2, 8, dtype=np.float32)
    (got,) = hlo_mlir.load(SDY).run(x, backend=backend)
    np.testing.assert_allclose(got, np.sin(x), rtol=1e-6)


@pytest.mark.parametrize("backend", ["interpreter", "jit"])
def test_python_callback_error_says_why_and_how(backend: str) -> None:
    with pytest.raises(hlo_mlir.HloError, match=r'"xla_ffi_python_cpu_callback" calls back into Python '
                       r"\(jax.debug.print, jax.pure_callback or io_callback\): the Python function is not part of "
                       r"the dump.*register_custom_call"):
        hlo_mlir.load(CALLBACK).run(np.ones(4, np.float32), backend=backend)


def test_python_callback_runs_with_a_registered_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    printed: list[np.ndarray] = []
    monkeypatch.setitem(CUSTOM_CALLS, "xla_ffi_python_cpu_callback", CUSTOM_CALLS.get("xla_ffi_python_cpu_callback"))
    register_custom_call("xla_ffi_python_cpu_callback", lambda op, args, ctx: printed.append(args[0]) or ())
    (got,) = hlo_mlir.load(CALLBACK).run(np.full(4, 3, np.float32))
    np.testing.assert_array_equal(got, np.full(4, 9, np.float32))
    np.testing.assert_array_equal(printed[0], np.full(4, 3, np.float32))


def test_jax_debug_print_as_stablehlo_gives_the_callback_error() -> None:
    jax = pytest.importorskip("jax")
    text = jax.jit(lambda x: jax.debug.print("x {}", x) or x * 2).lower(np.ones(4, np.float32)).as_text()
    with pytest.raises(hlo_mlir.HloError, match="calls back into Python"):
        hlo_mlir.load(text).run(np.ones(4, np.float32))
