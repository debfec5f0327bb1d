"""StableHLO text as JAX prints it: read by `load`/`hlo-opt`/`hlo-run` with XLA's results, and printed back.

Why: most JAX users and bug reports hold `jax.jit(f).lower(...).as_text()`, not HLO. Every program of the
JAX corpus (test/corpus/generate.py) is lowered to StableHLO here, read by us, run in the interpreter and
compared with XLA compiling the very same StableHLO text; `--emit=stablehlo` output must compile in XLA
to the same results as the module it came from.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import hlo_mlir
import jax.numpy as jnp
from hlo_mlir import oracle
from hlo_mlir.runtime.measure import compare
from hlo_mlir.tools import hlo_opt, hlo_run

_CORPUS = Path(__file__).resolve().parents[2] / "test" / "corpus"
sys.path.insert(0, str(_CORPUS))
import generate

sys.path.remove(str(_CORPUS))


def _stablehlo(name: str) -> str:
    prog = generate.PROGRAMS[name]
    with jax.enable_x64(prog.x64):
        args = [generate.shape_struct(s) for s in prog.params]
        jitted = jax.jit(prog.fn)
        if prog.generic_lowering:
            return jitted.trace(*args).lower(lowering_platforms=("tpu",)).as_text()
        return jitted.lower(*args).as_text()


def _assert_close(got: list, want: list, bound: float = 1e-3) -> None:
    assert len(got) == len(want)
    for err in compare(got, want, bound, bound):
        assert err.ok, err


@pytest.mark.parametrize("name", sorted(generate.PROGRAMS))
def test_emit_stablehlo_compiles_in_xla_to_the_same_results(name: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Our own printer (no jaxlib: XLA switched off while printing and reading back): XLA compiles its text to
    the results of the HLO module, and our reader reads it back to a module with those results."""
    hlo_text = (_CORPUS / f"{name}.hlo").read_text()
    path = tmp_path / "m.hlo"
    path.write_text(hlo_text)
    with monkeypatch.context() as m:
        m.setattr(oracle, "xla_available", lambda: False)
        assert hlo_opt.main([str(path), "--emit=stablehlo"]) == 0
        printed = capsys.readouterr().out
        back = hlo_mlir.load(printed)
    assert printed.startswith(f"module @{hlo_text.split()[1].rstrip(',')} ") and '= "stablehlo.' in printed
    args = oracle.random_inputs_for(hlo_text)
    want = oracle.run_xla(hlo_text, args)
    _assert_close(oracle.run_stablehlo(printed, args), want, 1e-5)
    assert back.filename == "<string> (as HLO)"
    _assert_close(back.run(*args), want)


@pytest.mark.parametrize("name", ["mlp_forward", "while_loop", "cond_switch"])
def test_hlo_run_jit_on_stablehlo_file(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / f"{name}.mlir"
    text = _stablehlo(name)
    path.write_text(text)
    args = oracle.random_inputs_for(hlo_mlir.load(text).to_hlo(), seed=3)
    np.savez(tmp_path / "in.npz", **{f"arg{i}": a for i, a in enumerate(args)})
    assert hlo_run.main([str(path), "--inputs", str(tmp_path / "in.npz"), "--outputs", str(tmp_path / "out.npz")]) == 0
    out = np.load(tmp_path / "out.npz")
    _assert_close([out[f"out{i}"] for i in range(len(out.files))], oracle.run_stablehlo(text, args))


def _lower(f: object, *args: object) -> str:
    return jax.jit(f).lower(*args).as_text()


def test_composite_call_and_backend_config_kept() -> None:
    def f(x: jax.Array) -> jax.Array:
        y = jax.lax.composite(lambda v: jnp.tanh(v) * 2, name="my.tanh2")(x)
        return jax.lax.cond(x[0] > 0, jnp.sin, jnp.cos, y)

    x = np.linspace(-1, 1, 8, dtype=np.float32)
    text = _lower(f, x)
    assert "stablehlo.composite" in text and "stablehlo.case" in text
    module = hlo_mlir.load(text)
    assert module.filename == "<string> (as HLO)"  # our own reader
    hlo = module.to_hlo()
    assert "is_composite=true" in hlo and 'composite.name="my.tanh2"' in hlo
    _assert_close(module.run(x), oracle.run_stablehlo(text, [x]))


def test_custom_call_backend_config_dictionary_and_sharding_kept() -> None:
    text = """module @m attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32> {mhlo.sharding = "{replicated}"}) -> (tensor<4xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.custom_call @Sharding(%arg0) {backend_config = "", mhlo.sharding = "{replicated}"} : (tensor<4xf32>) -> tensor<4xf32>
    %1 = stablehlo.custom_call @my_target(%0) {api_version = 4 : i32, backend_config = {index = 3 : i64, name = "x"}} : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
}
"""
    module = hlo_mlir.load(text)
    assert module.filename == "<string> (as HLO)"  # our own reader
    hlo = module.to_hlo()
    assert "sharding={replicated}" in hlo
    assert 'custom_call_target="my_target"' in hlo and "backend_config={index = 3 : i64, name = \"x\"}" in hlo


def test_syntax_error_points_into_the_stablehlo_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = _stablehlo("mlp_forward").replace("%3 = stablehlo.add", "%3 = stablehlo.addx")
    path = tmp_path / "bad.mlir"
    path.write_text(text)
    assert hlo_opt.main([str(path)]) == 1
    err = capsys.readouterr().err
    line = text.splitlines().index(next(s for s in text.splitlines() if "stablehlo.addx" in s)) + 1
    note, error = err.split("\n", 1)  # our reader's note, then XLA's error
    assert note == (f"{path}:{line}:5: note: the built-in StableHLO reader does not cover op 'stablehlo.addx'; "
                    "reading the text through XLA's translation (jaxlib) instead")
    assert error.startswith(f"{path}:{line}:10: error: custom op 'stablehlo.addx' is unknown\n")
    assert err.rstrip().endswith("^")


def test_stablehlo_without_module_header_is_recognised() -> None:
    text = "// from a bug report\n" + _stablehlo("softmax")
    assert hlo_mlir.load(text).to_hlo().startswith("HloModule jit_softmax\n")


def test_stablehlo_reaching_the_hlo_parser_gets_a_hint() -> None:
    body = "\n".join(line for line in _stablehlo("mlp_forward").splitlines() if "func.func" not in line)
    with pytest.raises(hlo_mlir.HloError, match="this looks like StableHLO MLIR"):
        hlo_mlir.load("HloModule m\n" + body)


@pytest.fixture
def no_xla(monkeypatch: pytest.MonkeyPatch) -> None:
    """As without jaxlib: XLA's translation unavailable."""
    monkeypatch.setattr(oracle, "xla_available", lambda: False)


@pytest.mark.parametrize("name", sorted(generate.PROGRAMS))
def test_own_reader_without_jaxlib_matches_xla(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every corpus program is read by our own reader (XLA's translation switched off while reading) and
    runs in our interpreter with the results of XLA compiling the same StableHLO text."""
    text = _stablehlo(name)
    with monkeypatch.context() as m:
        m.setattr(oracle, "xla_available", lambda: False)
        module = hlo_mlir.load(text)
    assert module.filename == "<string> (as HLO)"  # not "translated by XLA"
    args = oracle.random_inputs_for(module.to_hlo())
    _assert_close(module.run(*args), oracle.run_stablehlo(text, args))


def test_own_reader_error_points_at_the_stablehlo_op() -> None:
    text = _stablehlo("mlp_forward").replace("%3 = stablehlo.add %0, %2", "%3 = stablehlo.add %0, %1")
    line = next(i for i, s in enumerate(text.splitlines(), 1) if "%3 = stablehlo.add %0, %1" in s)
    with pytest.raises(hlo_mlir.HloError) as err:
        hlo_mlir.load(text)
    assert str(err.value).startswith(f"<string>:{line}:5: error: add: operands must have the same shape, got "
                                     "f32[16,64] and f32[1,64]\n    %3 = stablehlo.add %0, %1")


def test_without_jaxlib_what_the_reader_does_not_cover_is_named(no_xla: None) -> None:
    text = _stablehlo("mlp_forward").replace("%3 = stablehlo.add", "%3 = stablehlo.add_sideways")
    line = next(i for i, s in enumerate(text.splitlines(), 1) if "stablehlo.add_sideways" in s)
    with pytest.raises(hlo_mlir.HloError) as err:
        hlo_mlir.load(text)
    assert str(err.value).startswith(f"<string>:{line}:5: error: the built-in StableHLO reader does not cover op "
                                     "'stablehlo.add_sideways'; with jax/jaxlib installed")


def test_with_jaxlib_the_fallback_is_a_located_note(capsys: pytest.CaptureFixture[str]) -> None:
    """A module attribute the reader does not know (several partitions): XLA's translation reads it, and a note
    says why and which path was taken."""
    text = _stablehlo("mlp_forward").replace("mhlo.num_partitions = 1 : i32", "mhlo.num_partitions = 2 : i32")
    module = hlo_mlir.load(text)
    assert module.filename == "<string> (as HLO, translated by XLA)"
    err = capsys.readouterr().err
    assert err.startswith("<string>:1:") and "note: the built-in StableHLO reader does not cover module attribute " \
        "mhlo.num_partitions = 2 : i32; reading the text through XLA's translation (jaxlib) instead" in err


def test_own_reader_reduce_with_a_reducer_block(no_xla: None) -> None:
    """argmax and a two-operand lax.reduce: the long form of reduce, the reducer's arguments in pairs."""
    def f(x: jax.Array) -> tuple:
        inits = (np.float32(0), np.float32(1))  # typed: another test module may have enabled jax_enable_x64
        pair = jax.lax.reduce((x, x * 2), inits, lambda a, b: (a[0] + b[0], a[1] * b[1]), (0,))
        return jnp.argmax(x, axis=1), pair

    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    text = _lower(f, x)
    assert "reducer(" in text
    module = hlo_mlir.load(text)
    assert module.filename == "<string> (as HLO)"
    _assert_close(module.run(x), oracle.run_stablehlo(text, [x]), 1e-5)


_OPTIMIZED = sorted(p.name[: -len(".opt.hlo")] for p in _CORPUS.glob("*.opt.hlo"))


@pytest.mark.parametrize("name", [n for n in _OPTIMIZED if n != "top_k_search"])
def test_emit_stablehlo_of_optimized_dumps(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """XLA-optimized dumps (fusions, layout-changing bitcasts, copies) print too: XLA compiles the text to the
    results of the dump, and our reader reads it back to the same results."""
    from hlo_mlir.frontend.stablehlo import module_to_stablehlo

    hlo_text = (_CORPUS / f"{name}.opt.hlo").read_text()
    with monkeypatch.context() as m:
        m.setattr(oracle, "xla_available", lambda: False)
        printed = module_to_stablehlo(hlo_mlir.load(hlo_text).mlir)
        back = hlo_mlir.load(printed)
    args = oracle.random_inputs_for(hlo_text)
    want = oracle.run_xla(hlo_text, args)
    _assert_close(oracle.run_stablehlo(printed, args), want, 1e-4)
    _assert_close(back.run(*args), want)


def test_emit_stablehlo_names_the_instruction_it_cannot_print(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """XLA's TopK custom call (with a comparator computation) has no printed form yet: a located error."""
    path = tmp_path / "topk.hlo"
    path.write_text((_CORPUS / "top_k_search.opt.hlo").read_text())
    assert hlo_opt.main([str(path), "--emit=stablehlo"]) == 1
    err = capsys.readouterr().err
    assert re.match(rf"{re.escape(str(path))}:\d+:3: error: custom-call 'custom-call': called computations are not "
                    "printed as StableHLO yet", err), err


def test_own_reader_keeps_shardy_shardings(no_xla: None) -> None:
    """What JAX prints with shardings (even on one device, and for every program drawing random numbers from
    a key): the `sdy.mesh`, parameter and result shardings and sharding constraints survive into the HLO as
    XLA's translation keeps them, and the values are XLA's."""
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    sharding = NamedSharding(Mesh(np.array(jax.devices()[:1]), ("x",)), PartitionSpec("x"))
    f = jax.jit(lambda a: jax.lax.with_sharding_constraint(jnp.sin(a) * 2, sharding), in_shardings=sharding,
                out_shardings=sharding)
    x = np.linspace(0, 1, 8, dtype=np.float32)
    text = f.lower(x).as_text()
    assert "sdy.mesh @mesh" in text and "sdy.sharding_constraint" in text
    module = hlo_mlir.load(text)
    hlo = module.to_hlo()
    assert hlo.startswith('HloModule jit__lambda, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=1]>}}')
    assert r'parameter(0), frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{\"x\"}]>"}' in hlo
    assert 'custom_call_target="Sharding"' in hlo and 'custom_call_target="xla.sdy.FuncResultSharding"' in hlo
    _assert_close(module.run(x), oracle.run_stablehlo(text, [x]), 1e-6)

    key_text = _lower(lambda k: jax.random.uniform(k, (3,)), jax.random.key(0))
    key = np.array([0, 42], np.uint32)
    np.testing.assert_array_equal(hlo_mlir.load(key_text).run(key)[0], oracle.run_stablehlo(key_text, [key])[0])


def test_shardings_and_frontend_attributes_survive_the_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Printed as mhlo.sharding / mhlo.frontend_attributes (module, parameter, instruction), read back into
    the same HLO attributes by our reader, and by XLA's translation too."""
    path = tmp_path / "m.hlo"
    path.write_text("""HloModule sharded, frontend_attributes={team="h7"}

ENTRY main {
  p = f32[4] parameter(0), sharding={replicated}, frontend_attributes={role="x"}
  a = f32[4] add(p, p), sharding={replicated}, frontend_attributes={note="kept"}
  ROOT s = f32[4] custom-call(a), custom_call_target="Sharding", sharding={replicated}
}
""")
    monkeypatch.setattr(oracle, "xla_available", lambda: False)
    assert hlo_opt.main([str(path), "--emit=stablehlo"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith('module @sharded attributes {mhlo.frontend_attributes = {team = "h7"}} {')
    hlo = hlo_mlir.load(printed).to_hlo()
    assert hlo.startswith('HloModule sharded, frontend_attributes={team="h7"}')
    assert 'parameter(0), frontend_attributes={role="x"}, sharding={replicated}' in hlo
    assert 'frontend_attributes={note="kept"}, sharding={replicated}' in hlo
    monkeypatch.undo()
    xla_hlo = oracle.stablehlo_to_hlo(printed)
    assert 'parameter(0), sharding={replicated}, frontend_attributes={role="x"}' in xla_hlo


def test_a_malformed_op_is_a_located_error_not_a_traceback(no_xla: None) -> None:
    text = _stablehlo("gather").replace("dimension_numbers = #stablehlo.gather<", "dimension_nums = #stablehlo.gather<")
    line = next(i for i, s in enumerate(text.splitlines(), 1) if "dimension_nums" in s)
    with pytest.raises(hlo_mlir.HloError) as err:
        hlo_mlir.load(text)
    assert re.match(rf"<string>:{line}:\d+: error: the built-in StableHLO reader does not cover this form of "
                    r"stablehlo.gather \(KeyError: 'dimension_numbers'\)", str(err.value)), str(err.value)
    unknown = _stablehlo("sort").replace("is_stable = true}>", "is_stable = true, stable_enough = 3 : i64}>", 1)
    with pytest.raises(hlo_mlir.HloError, match=r"does not cover attribute stable_enough \(stablehlo.sort\)"):
        hlo_mlir.load(unknown)


_ATTRIBUTED = """module @m attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32 MODULE} {
  sdy.mesh @mesh = <["x"=1]> MESH
  func.func private @g(%arg0: tensor<4xf32> PARAM) -> (tensor<4xf32> RESULT) FUNCTION {
    %0 = stablehlo.add %arg0, %arg0 OP : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf32> {jax.result_info = "result"}) {
    %0 = call @g(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""


def _attributed(**parts: str) -> str:
    text = _ATTRIBUTED
    for key in ("MODULE", "MESH", "PARAM", "RESULT", "FUNCTION", "OP"):
        text = text.replace(key, parts.get(key.lower(), ""))
    return text


def test_function_execution_thread_is_kept_as_xla_keeps_it(no_xla: None) -> None:
    text = _attributed(function='attributes {execution_thread = "host"}', param='{mhlo.layout_mode = "default"}')
    hlo = hlo_mlir.load(text).to_hlo()
    assert re.search(r'\n\}, execution_thread="host"\n\nENTRY', hlo), hlo
    assert '}, execution_thread="host"' in oracle.stablehlo_to_hlo(text)
    from hlo_mlir.frontend.stablehlo import module_to_stablehlo

    printed = module_to_stablehlo(hlo_mlir.load(hlo).mlir)  # and back: our printer writes it as the attribute
    assert 'func.func private @g(%arg0: tensor<4xf32>) -> tensor<4xf32> attributes {execution_thread = "host"}' \
        in printed
    assert '}, execution_thread="host"' in hlo_mlir.load(printed).to_hlo()
    assert '}, execution_thread="host"' in oracle.stablehlo_to_hlo(printed)


@pytest.mark.parametrize(("part", "attr", "what"), [
    ("function", "attributes {foo = 1 : i32}", "function attribute foo = 1 : i32"),
    # XLA's translation drops a function's frontend attributes without a word; HLO computations have none.
    ("function", 'attributes {mhlo.frontend_attributes = {a = "b"}}', "function attribute mhlo.frontend_attributes"),
    ("function", 'attributes {execution_thread = 3 : i32}', "function attribute execution_thread = 3"),
    # Only the entry's parameters are donated to its results (test_donated_parameters_alias_as_xla_reads_them).
    ("param", "{tf.aliasing_output = 0 : i32}", "tf.aliasing_output = 0 (only the entry's parameters alias"),
    ("param", '{mhlo.layout_mode = "{0}"}', 'parameter attribute mhlo.layout_mode = "{0}"'),
    ("param", "{mhlo.frontend_attributes = {a = 1 : i32}}", "parameter attribute mhlo.frontend_attributes = {a = 1"),
    ("result", '{mhlo.frontend_attributes = {a = "b"}}', "result attribute mhlo.frontend_attributes"),
    ("result", '{mhlo.sharding = "{replicated}", sdy.sharding = #sdy.sharding<@mesh, [{}]>}',
     "a result with both mhlo.sharding and sdy.sharding"),
    ("module", ", jax.uses_shape_polymorphism = true", "module attribute jax.uses_shape_polymorphism = true"),
    ("module", ", mhlo.frontend_attributes = {a = [1]}", "module attribute mhlo.frontend_attributes = {a = [1]}"),
    ("mesh", "{foo = 1 : i32}", "mesh attribute foo = 1 : i32"),
    # JAX's copy of the axes is read when it says what the sdy mesh says (test_own_reader_keeps_shardy_shardings).
    ("mesh", '{stablehlo.mesh = {axes = [{name = "y", size = 1 : i64}]}}', "mesh attribute stablehlo.mesh"),
    ("op", "{mhlo.frontend_attributes = {a = 2.0 : f32}}", "stablehlo.add: mhlo.frontend_attributes = {a = 2.0"),
])
def test_an_attribute_the_reader_would_drop_is_a_located_error(part: str, attr: str, what: str, no_xla: None) -> None:
    """Function, parameter, result, module, mesh and op attributes HLO cannot carry: named where written (an
    op's: at the op, as its other errors)."""
    text = _attributed(**{part: attr})
    line = next(i for i, s in enumerate(text.splitlines(), 1) if attr in s)
    at = "%0 = stablehlo.add" if part == "op" else attr
    col = text.splitlines()[line - 1].index(at) + 1
    with pytest.raises(hlo_mlir.HloError) as err:
        hlo_mlir.load(text)
    m = re.match(r"<string>:(\d+):(\d+): error: the built-in StableHLO reader does not cover (.*)", str(err.value))
    assert m is not None and m.group(3).startswith(what), str(err.value)
    assert int(m.group(1)) == line and col <= int(m.group(2)) < col + len(at), str(err.value)


def test_attributes_of_ops_written_as_several_instructions_are_kept(no_xla: None) -> None:
    """Constants (a splat is a broadcast), tuples and CHLO decompositions carry the op's frontend attributes
    on the instruction that is the op's value; an attribute they do not know is an error, not dropped."""
    text = """module @m {
  func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf32>) {
    %c = stablehlo.constant {mhlo.frontend_attributes = {k = "splat"}} dense<2.0> : tensor<4xf32>
    %d = stablehlo.constant {mhlo.frontend_attributes = {k = "scalar"}} dense<1.0> : tensor<f32>
    %0 = stablehlo.add %arg0, %c : tensor<4xf32>
    %1 = chlo.erf_inv %0 {mhlo.frontend_attributes = {k = "chlo"}} : tensor<4xf32> -> tensor<4xf32>
    %t = stablehlo.tuple %1, %d {mhlo.frontend_attributes = {k = "tuple"}} : tuple<tensor<4xf32>, tensor<f32>>
    %2 = stablehlo.get_tuple_element %t[0] : (tuple<tensor<4xf32>, tensor<f32>>) -> tensor<4xf32>
    return %2 : tensor<4xf32>
  }
}
"""
    hlo = hlo_mlir.load(text).to_hlo()
    assert re.search(r"%c = f32\[4\] broadcast\([^\n]*, frontend_attributes=\{k=\"splat\"\}\n", hlo), hlo
    assert 'constant(1), frontend_attributes={k="scalar"}' in hlo
    assert re.search(r"%v1 = f32\[4\] [^\n]*, frontend_attributes=\{k=\"chlo\"\}\n", hlo), hlo
    assert 'tuple(f32[4] %v1, f32[] %d), frontend_attributes={k="tuple"}' in hlo
    for unknown in ('{foo = 1 : i32} dense<2.0>', ' {foo = 1 : i32} : tuple'):
        bad = text.replace('{mhlo.frontend_attributes = {k = "splat"}} dense<2.0>' if "dense" in unknown else
                           ' {mhlo.frontend_attributes = {k = "tuple"}} : tuple', unknown)
        with pytest.raises(hlo_mlir.HloError, match=r"does not cover attribute foo \(stablehlo\.(constant|tuple)\)"):
            hlo_mlir.load(bad)


def test_while_attributes_are_kept_on_the_loop(no_xla: None) -> None:
    """A while's frontend attributes go on HLO's while; its mhlo.sharding for one value cannot (the loop is over
    a 1-tuple), so that is an error rather than dropped."""
    text = """module @m {
  func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = "stablehlo.while"(%arg0) ({
    ^bb0(%it: tensor<4xf32>):
      %c = stablehlo.constant dense<false> : tensor<i1>
      stablehlo.return %c : tensor<i1>
    }, {
    ^bb0(%it: tensor<4xf32>):
      stablehlo.return %it : tensor<4xf32>
    }) {mhlo.frontend_attributes = {k = "while"}} : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""
    hlo = hlo_mlir.load(text).to_hlo()
    assert re.search(r" while\([^\n]*, frontend_attributes=\{k=\"while\"\}\n", hlo), hlo
    sharded = text.replace('{mhlo.frontend_attributes = {k = "while"}}', '{mhlo.sharding = "{replicated}"}')
    with pytest.raises(hlo_mlir.HloError, match=r"<string>:3:5: error: .* mhlo.sharding of a one-value while"):
        hlo_mlir.load(sharded)


@pytest.mark.parametrize(("donate", "results"), [((0,), 2), ((1,), 1), ((0, 1), 2)])
def test_donated_parameters_alias_as_xla_reads_them(donate: tuple[int, ...], results: int, no_xla: None) -> None:
    """JAX marks donated arguments `tf.aliasing_output`; XLA's translation makes them the module's
    input_output_alias, and so does our reader (nothing dropped, no jaxlib needed)."""
    args = ", ".join(f"%arg{i}: tensor<2x3xf32>" + (f" {{tf.aliasing_output = {i if results > 1 else 0} : i32}}"
                                                    if i in donate else "") for i in range(2))
    outs = ["%0", "%1"][:results]
    text = f"""module @jit_f attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} {{
  func.func public @main({args}) -> ({", ".join(["tensor<2x3xf32>"] * results)}) {{
    %0 = stablehlo.add %arg0, %arg1 : tensor<2x3xf32>
    %1 = stablehlo.multiply %arg0, %arg1 : tensor<2x3xf32>
    return {", ".join(outs)} : {", ".join(["tensor<2x3xf32>"] * results)}
  }}
}}
"""
    alias = re.compile(r"input_output_alias=\{ (?:[^{}]|\{[^{}]*\})* \}")
    ours = alias.search(hlo_mlir.load(text).to_hlo().splitlines()[0])
    xla = alias.search(oracle.stablehlo_to_hlo(text).splitlines()[0])
    assert ours is not None and xla is not None and ours.group(0) == xla.group(0), (ours, xla)
