"""Fuzzing the tools with broken input: every outcome is a result or a diagnostic, never a traceback.

The tools' `main(argv)` run in-process on deterministic mutations of the corpus (fixed seeds). Each
run must exit 0 or 1, print no Python traceback, print an `error:` line when it fails, and not leak a
raw Python exception as the message (a user mistake is reported as the rule it breaks).
"""

from __future__ import annotations

import contextlib
import io
import random
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import hlo_mlir
import numpy as np
import pytest
from hlo_mlir.diagnostics import HloError
from hlo_mlir.oracle import run_xla, xla_available
from hlo_mlir.passes.registry import PASSES
from hlo_mlir.tools import hlo_opt, hlo_run

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
FILES = sorted(CORPUS.glob("*.hlo"))
# Small modules keep interpreter runs quick; no loops, which a mutated condition can make endless.
SMALL = [f for f in FILES if f.stat().st_size < 2500 and "while(" not in f.read_text()]
INTERPRETER = ["--backend", "interpreter"]  # hlo-run's default backend is the JIT
PASS_INPUTS = ["mlp_forward.hlo", "tuple_outputs.hlo", "cond_switch.opt.hlo"]

UNARY = ["negate", "abs", "exponential", "log", "tanh", "sqrt", "rsqrt", "floor", "ceil", "sign", "not", "copy",
         "cosine", "sine", "logistic", "is-finite", "real", "imag", "convert", "bitcast", "reshape", "transpose",
         "broadcast", "reverse", "popcnt", "count-leading-zeros", "round-nearest-even"]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "remainder", "and", "or", "xor",
          "compare", "atan2", "shift-left", "shift-right-logical", "dot", "complex", "concatenate", "pad"]
TYPES = ["f32", "f16", "bf16", "f64", "s32", "s8", "u8", "u32", "s64", "pred", "c64", "c128", "s4", "f8e4m3fn",
         "token", "u64"]
GARBAGE = ["\x00", "\x7f", "é", "∀", "\u202e", "{", "}", ")", "[", "%", '"', "/*", "ROOT ", "=", "\t", "-", "💥"]
NUMBERS = ["0", "-1", "1", "7", "4294967296", "9223372036854775808", "99999999999999999999"]

# A raw Python exception in a diagnostic means a check is missing in front of the code that raised it.
LEAKED = re.compile(r"\b(TypeError|ValueError|IndexError|KeyError|AttributeError|AssertionError|ZeroDivisionError|"
                    r"OverflowError|RecursionError|UnboundLocalError|NameError|internal error|malformed instruction)\b")


def _del_line(t: str, rng: random.Random) -> str | None:
    lines = t.split("\n")
    del lines[rng.randrange(len(lines))]
    return "\n".join(lines)


def _dup_line(t: str, rng: random.Random) -> str | None:
    lines = t.split("\n")
    i = rng.randrange(len(lines))
    lines.insert(i, lines[i])
    return "\n".join(lines)


def _swap_tokens(t: str, rng: random.Random) -> str | None:
    toks = list(re.finditer(r"[A-Za-z_][\w.\-]*|\d+", t))
    a, b = sorted(rng.sample(range(len(toks)), 2))
    ta, tb = toks[a], toks[b]
    return t[: ta.start()] + tb.group() + t[ta.end() : tb.start()] + ta.group() + t[tb.end() :]


def _number(t: str, rng: random.Random) -> str | None:
    nums = list(re.finditer(r"(?<![\w.])\d+(?![\w.])", t))
    if not nums:
        return None
    m = rng.choice(nums)
    return t[: m.start()] + rng.choice(NUMBERS) + t[m.end() :]


def _element_type(t: str, rng: random.Random) -> str | None:
    found = list(re.finditer(r"\b(f32|f16|bf16|f64|s32|s8|u8|u32|s64|pred|c64|s16|u16|u64)\[", t))
    if not found:
        return None
    m = rng.choice(found)
    return t[: m.start()] + rng.choice(TYPES) + "[" + t[m.end() :]


def _drop_attribute(t: str, rng: random.Random) -> str | None:
    found = list(re.finditer(r", [a-z_]+=(\{[^{}]*\}|[^,\s)]+)", t))
    if not found:
        return None
    m = rng.choice(found)
    return t[: m.start()] + t[m.end() :]


def _rename_operand(t: str, rng: random.Random) -> str | None:
    found = list(re.finditer(r"[(,] ?%?([A-Za-z_][\w.\-]*)(?=[,)])", t))
    if not found:
        return None
    m = rng.choice(found)
    return t[: m.start(1)] + "unknown_" + m.group(1) + t[m.end(1) :]


def _truncate(t: str, rng: random.Random) -> str | None:
    return t[: rng.randrange(len(t))]


def _garbage(t: str, rng: random.Random) -> str | None:
    i = rng.randrange(len(t))
    return t[:i] + rng.choice(GARBAGE) + t[i:]


def _opcode(t: str, rng: random.Random) -> str | None:
    """Another opcode of the same arity."""
    found = list(re.finditer(r" (" + "|".join(map(re.escape, UNARY + BINARY)) + r")\(", t))
    if not found:
        return None
    m = rng.choice(found)
    return t[: m.start(1)] + rng.choice(UNARY if m.group(1) in UNARY else BINARY) + t[m.end(1) :]


def _layout(t: str, rng: random.Random) -> str | None:
    found = list(re.finditer(r"\]\{(\d+(?:,\d+)+)\}", t))
    if not found:
        return None
    m = rng.choice(found)
    dims = m.group(1).split(",")
    rng.shuffle(dims)
    return t[: m.start(1)] + ",".join(dims[: rng.choice([len(dims), len(dims) - 1])]) + t[m.end(1) :]


MUTATIONS: dict[str, Callable[[str, random.Random], str | None]] = {
    "delete-line": _del_line, "duplicate-line": _dup_line, "swap-tokens": _swap_tokens, "number": _number,
    "element-type": _element_type, "drop-attribute": _drop_attribute, "rename-operand": _rename_operand,
    "truncate": _truncate, "garbage": _garbage, "opcode": _opcode, "layout": _layout,
}


def mutants(kind: str, seed: int, count: int, files: list[Path]) -> list[tuple[str, str]]:
    """`count` (description, text) pairs: corpus modules changed by mutation `kind`."""
    rng = random.Random(f"{kind}/{seed}")
    out = []
    while len(out) < count:
        f = rng.choice(files)
        text = MUTATIONS[kind](f.read_text(), rng)
        if text is not None:
            out.append((f"{kind} of {f.name} (seed {seed}, #{len(out)})", text))
    return out


def call(main: Callable[[list[str]], int], argv: list[str], stdin: str | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as e:  # argparse rejecting a flag value
            rc = e.code if isinstance(e.code, int) else 1
    return rc, out.getvalue(), err.getvalue()


def check(rc: int, err: str, what: str) -> None:
    assert rc in (0, 1, 2), f"{what}: exit code {rc}\n{err}"  # 2: argparse usage errors
    assert "Traceback" not in err, f"{what}: traceback\n{err}"
    if rc != 0:
        assert "error:" in err, f"{what}: failed without a diagnostic\n{err}"
        assert not LEAKED.search(err), f"{what}: raw Python exception in the diagnostic\n{err}"


def run_opt(tmp_path: Path, text: str, flags: list[str], what: str) -> tuple[int, str, str]:
    path = tmp_path / "m.hlo"
    path.write_text(text)
    rc, out, err = call(hlo_opt.main, [str(path), *flags])
    check(rc, err, what)
    return rc, out, err


@pytest.mark.parametrize("kind", sorted(MUTATIONS))
def test_hlo_opt_mutations(kind: str, tmp_path: Path) -> None:
    outcomes = set()
    for what, text in mutants(kind, 1, 12, FILES):
        outcomes.add(run_opt(tmp_path, text, [], what)[0])
    assert 1 in outcomes, f"no {kind} mutant was rejected: {sorted(outcomes)}"


@pytest.mark.parametrize("kind", sorted(MUTATIONS))
def test_hlo_opt_mutations_unverified(kind: str, tmp_path: Path) -> None:
    """Without the shape verifier, the importer, printer and MLIR verifier face the bad input alone."""
    for what, text in mutants(kind, 2, 6, FILES):
        run_opt(tmp_path, text, ["--no-verify", "--emit=mlir"], what)
        run_opt(tmp_path, text, ["--no-verify"], what)


def test_mutations_do_fail(tmp_path: Path) -> None:
    """The harness is not vacuous: most mutants are rejected with a located diagnostic."""
    failed = 0
    for what, text in mutants("rename-operand", 3, 10, FILES):
        rc, _, err = run_opt(tmp_path, text, [], what)
        failed += rc == 1 and bool(re.search(r"m\.hlo:\d+:\d+: error: ", err))
    assert failed >= 8


@pytest.mark.parametrize("kind", ["number", "opcode", "element-type", "drop-attribute", "swap-tokens", "layout",
                                  "duplicate-line"])
@pytest.mark.parametrize("verify", [True, False])
def test_hlo_run_mutations(kind: str, verify: bool, tmp_path: Path) -> None:
    """Mutated small modules run in the interpreter, or fail with a diagnostic naming the rule."""
    path = tmp_path / "m.hlo"
    for what, text in mutants(kind, 4, 5, SMALL):
        if re.search(r"\d{9,}", text):  # a huge dimension that passes unverified would allocate it
            continue
        path.write_text(text)
        flags = [*INTERPRETER, "--random-inputs", "--seed", "3"] + ([] if verify else ["--no-verify"])
        rc, _, err = call(hlo_run.main, [str(path), *flags])
        check(rc, err, what)


MLIR_EDITS = [
    (r'hlo\.name = "[^"]*"', ["hlo.name = 7", 'hlo.name = ""']),
    (r"= (array<i64[^>]*>)", ['"x"', "42 : i64", "@nosuch", "[1, 2]"]),
    (r'= ("[^"]*")', ["unit", "dense<1> : tensor<2xi32>", "array<i64: 1, 99>"]),
    (r"tensor<[0-9x]*[a-z0-9]+>", ["memref<2xf32>", "tensor<?xf32>", "tensor<2xindex>", "tuple<>", "i32"]),
    (r"\d+", ["0", "-1", "99", "4294967296"]),
    (r"    return [^\n]*\n", [""]),
    (r"\n[^\n]*\n", ["\n"]),
]


def mlir_mutants(seed: int, count: int) -> list[tuple[str, str]]:
    """Edits of the `--emit=mlir` form of small corpus modules, fed back as MLIR input."""
    rng = random.Random(f"mlir/{seed}")
    out = []
    while len(out) < count:
        f = rng.choice(SMALL)
        text = hlo_mlir.load(f).to_mlir()
        pattern, replacements = rng.choice(MLIR_EDITS)
        found = list(re.finditer(pattern, text))
        if found:
            m = rng.choice(found)
            span = m.span(1) if m.re.groups else m.span()
            out.append((f"mlir edit {pattern!r} of {f.name} (#{len(out)})",
                        text[: span[0]] + rng.choice(replacements) + text[span[1] :]))
    return out


def test_mlir_input_mutations(tmp_path: Path) -> None:
    """Hand-edited hlo-dialect MLIR: every tool path rejects what is not well-formed HLO."""
    path = tmp_path / "m.mlir"
    for what, text in mlir_mutants(8, 40):
        path.write_text(text)
        for main, argv in ((hlo_opt.main, [str(path)]), (hlo_opt.main, [str(path), "--print-indexing-maps"]),
                           (hlo_run.main, [str(path), "--random-inputs", *INTERPRETER])):
            rc, _, err = call(main, argv)
            check(rc, err, f"{argv[1:]} on {what}")


def _instruction_names(text: str) -> list[str]:
    return re.findall(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=", text, flags=re.MULTILINE)


@pytest.mark.parametrize("fmt", ["document", "xla"])
def test_print_indexing_maps_random_instructions(fmt: str, tmp_path: Path) -> None:
    rng = random.Random(f"indexing/{fmt}")
    for f in rng.sample(FILES, 12):
        text = f.read_text()
        for name in rng.sample(_instruction_names(text), 3) + ["no_such_instruction", ""]:
            run_opt(tmp_path, text, [f"--print-indexing-maps={name}", f"--indexing-map-format={fmt}"],
                    f"--print-indexing-maps={name} on {f.name}")


@pytest.mark.parametrize("fmt", ["document", "xla"])
def test_print_indexing_maps_of_mutants(fmt: str, tmp_path: Path) -> None:
    for kind in ("opcode", "number", "drop-attribute"):
        for what, text in mutants(kind, 5, 4, FILES):
            names = _instruction_names(text)
            name = names[len(names) // 2] if names else ""
            run_opt(tmp_path, text, [f"--print-indexing-maps={name}", f"--indexing-map-format={fmt}", "--no-verify"],
                    f"--print-indexing-maps={name} on {what}")


@pytest.mark.parametrize("name", sorted(PASSES))
def test_each_pass_output_reparses(name: str, tmp_path: Path) -> None:
    for f in PASS_INPUTS:
        rc, out, err = run_opt(tmp_path, (CORPUS / f).read_text(), [f"--passes={name}"], f"--passes={name} on {f}")
        assert rc == 0, f"--passes={name} on {f}\n{err}"
        hlo_mlir.load(out)  # the pass output is valid HLO that passes the shape verifier


def test_pipeline_default_output_reparses(tmp_path: Path) -> None:
    for f in PASS_INPUTS:
        rc, out, err = run_opt(tmp_path, (CORPUS / f).read_text(), ["--pipeline=default"], f"pipeline on {f}")
        assert rc == 0, err
        hlo_mlir.load(out)


@pytest.mark.parametrize("flags", [
    ["--passes=no-such-pass"], ["--passes=constant-fold{size-limit=x}"], ["--passes=dce{bogus=1}"],
    ["--passes=dce,"], ["--passes=,"], ["--pipeline=nope"], ["--pass-pipeline=builtin.module(cse"],
    ["--passes=dce", "--pipeline=default"], ["--print-ir-after=nope", "--passes=dce"],
    ["--print-indexing-maps=", "--emit=mlir"], ["--split-input-file"],
])
def test_bad_flags(flags: list[str], tmp_path: Path) -> None:
    run_opt(tmp_path, (CORPUS / "mlp_forward.hlo").read_text(), flags, " ".join(flags))


def test_passes_on_mutants(tmp_path: Path) -> None:
    """Passes only see verified modules, but mutants still reach them in unusual valid shapes."""
    names = sorted(PASSES)
    rng = random.Random("passes")
    for kind in ("opcode", "delete-line", "layout"):
        for what, text in mutants(kind, 6, 4, SMALL):
            name = rng.choice(names)
            rc, out, _ = run_opt(tmp_path, text, [f"--passes={name}"], f"--passes={name} on {what}")
            if rc == 0:
                hlo_mlir.load(out)


@pytest.mark.parametrize("text", [
    "", "\n\n", "HloModule", "HloModule m\nENTRY", "module {", "module {}", "func.func @f() {", "\x00\x01\x02",
    "HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n" * 2,
    ('module {\n  func.func @main() -> tensor<f32> {\n    %0 = "hlo.add"() : () -> tensor<f32>\n'
    "    return %0 : tensor<f32>\n  }\n}\n"),
    "HloModule m\nENTRY e {\n  ROOT p = " + "(" * 3000 + "f32[]" + ")" * 3000 + " parameter(0)\n}\n",
    "HloModule m\nENTRY e {\n  ROOT c = f32[1] constant(" + "{" * 3000 + "1" + "}" * 3000 + ")\n}\n",
    "HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), to_apply=e\n}\n",
    ("HloModule m\nENTRY e {\n  c = f32[] constant(1)\n"
    "  ROOT b = f32[100000,100000,100000] broadcast(c), dimensions={}\n}\n"),
])
def test_degenerate_inputs(text: str, tmp_path: Path) -> None:
    rc, _, err = call(hlo_opt.main, ["-o", str(tmp_path / "out"), str(_write(tmp_path, text))])
    check(rc, err, repr(text))
    rc, _, err = call(hlo_run.main, [str(_write(tmp_path, text)), "--random-inputs", *INTERPRETER])
    check(rc, err, repr(text))


def test_deep_but_legal_nesting(tmp_path: Path) -> None:
    """100 levels of tuple nesting are accepted, printed and run."""
    deep = "(" * 100 + "f32[]" + ")" * 100
    path = _write(tmp_path, f"HloModule m\nENTRY e {{\n  ROOT p = {deep} parameter(0)\n}}\n")
    for main, argv in ((hlo_opt.main, [str(path)]),
                       (hlo_run.main, [str(path), "--random-inputs", "--print", *INTERPRETER])):
        rc, _, err = call(main, argv)
        check(rc, err, "100-deep tuple")
        assert rc == 0, err


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "in.hlo"
    path.write_text(text)
    return path


def test_jit_on_mutants(tmp_path: Path) -> None:
    """The JIT and the lowering stages behind --emit reject bad modules with diagnostics too."""
    path = tmp_path / "m.hlo"
    sources = [CORPUS / "mlp_forward.hlo", CORPUS / "select_clamp.hlo"]
    cases = [(f"{f.name} as is", f.read_text()) for f in sources]
    cases += mutants("opcode", 7, 2, sources) + mutants("number", 7, 2, sources)
    ran = 0
    for what, text in cases:
        path.write_text(text)
        rc, _, err = call(hlo_run.main, [str(path), "--random-inputs", "--backend", "jit"])
        check(rc, err, f"jit run of {what}")
        ran += rc == 0
        rc, _, err = call(hlo_opt.main, [str(path), "--emit=llvm-ir", "-o", str(tmp_path / "out.ll")])
        check(rc, err, f"--emit=llvm-ir of {what}")
    assert ran >= 2


@pytest.mark.parametrize("body, message", [
    ("  p = f32[2,3] parameter(0)\n  q = f32[3,2] parameter(1)\n  ROOT a = f32[2,3] add(p, q)\n",
     "operands must have the same shape, got f32[2,3] and f32[3,2]"),
    ("  p = f32[] parameter(0)\n  ROOT c = f32[] call(p)\n", "attribute 'to_apply' is required"),
], ids=["add-shapes", "call-without-to_apply"])
def test_jit_unverified_names_the_broken_rule(body: str, message: str, tmp_path: Path) -> None:
    path = _write(tmp_path, f"HloModule m\nENTRY e {{\n{body}}}\n")
    rc, _, err = call(hlo_run.main, [str(path), "--random-inputs", "--no-verify", "--backend", "jit"])
    check(rc, err, "jit run")
    assert rc == 1 and message in err, err


def test_jit_huge_result_is_a_diagnostic(tmp_path: Path) -> None:
    """In a subprocess: this case kills the process that runs it."""
    path = _write(tmp_path, "HloModule m\nENTRY e {\n  c = f32[] constant(1)\n"
                            "  ROOT b = f32[100000,100000,100] broadcast(c), dimensions={}\n}\n")
    r = subprocess.run([sys.executable, "-m", "hlo_mlir.tools.hlo_run", str(path), "--backend", "jit"],
                       check=False, capture_output=True, text=True, timeout=300)
    check(r.returncode, r.stderr, "jit run of a 4 TB broadcast")
    assert r.returncode == 1
    assert "in.hlo:4:3: error: jit: instruction 'b' (f32[100000,100000,100]) needs a buffer of 4000000000000 bytes" \
        in r.stderr


def test_jit_huge_intermediate_is_a_diagnostic(tmp_path: Path) -> None:
    """A 1.6 TB sort operand inside the module (the result is small): it was a SIGSEGV of the compiled code,
    which cannot report a failed allocation. In a subprocess, as a crash would kill the process running it."""
    path = _write(tmp_path, """HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT a = f32[] add(x, y)
}
lt {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT c = pred[] compare(x, y), direction=LT
}
ENTRY e {
  p = f32[4] parameter(0)
  b = f32[4,100000000000] broadcast(p), dimensions={0}
  e = f32[4,100000000000] exponential(b)
  s = f32[4,100000000000] sort(e), dimensions={1}, to_apply=lt
  z = f32[] constant(0)
  ROOT r = f32[4] reduce(s, z), dimensions={1}, to_apply=add
}
""")
    r = subprocess.run([sys.executable, "-m", "hlo_mlir.tools.hlo_run", str(path), "--random-inputs", "--backend",
                        "jit", "--no-cache"], check=False, capture_output=True, text=True, timeout=300)
    check(r.returncode, r.stderr, "jit run of a 1.6 TB intermediate")
    assert r.returncode == 1
    # The first such buffer: `e`'s 1.6 TB, or where fusion computes the exponential into the sort's own buffer
    # (two halves its merge passes alternate between) `s`'s 3.2 TB.
    assert re.search(r"in\.hlo:(15:3: error: jit: instruction 'e' \(f32\[4,100000000000\]\) needs a buffer of "
                     r"1600000000000|16:3: error: jit: instruction 's' \(f32\[4,100000000000\]\) needs a buffer "
                     r"of 3200000000000) bytes, more than this machine's memory and swap", r.stderr), r.stderr


def test_jit_deep_tuple_parameter(tmp_path: Path) -> None:
    deep = "(" * 100 + "f32[]" + ")" * 100
    path = _write(tmp_path, f"HloModule m\nENTRY e {{\n  ROOT p = {deep} parameter(0)\n}}\n")
    rc, _, err = call(hlo_run.main, [str(path), "--random-inputs", "--backend", "jit"])
    check(rc, err, "jit run of a 100-deep tuple")


ONE_PARAMETER = "HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n"


@pytest.mark.parametrize("name, content, message", [
    ("empty.npz", None, "empty.npz: missing input(s) arg0 (keys must be arg0, arg1, ...)"),
    ("wrong.npy", np.zeros((3, 3), np.int8), "argument 0 (parameter 'p'): expected shape f32[2]"),
    ("objects.npy", np.array([None, None], dtype=object), "objects.npy: not a valid .npy file"),
    ("junk.npy", b"\x93NUMPY junk", "junk.npy: not a valid .npy file"),
    ("junk.npz", b"PK\x03\x04junk", "junk.npz: not a valid .npz file"),
    ("archive.npy", {}, "archive.npy: not a valid .npy file (it holds several arrays)"),
    ("missing.npz", "", "cannot read"),
    ("missing.npy", "", "cannot read"),
    ("cut.txt", b"f32[2] {1, 2,", "error: unexpected ')'"),
    ("binary.txt", b"\xff\xfe", "binary.txt: expected an .npy file or XLA literal text, got binary data"),
    ("f64.npy", np.zeros(2, np.float64), "argument 0 (parameter 'p'): expected element type f32 (float32), got float64"),
    ("extra.npz", {"arg0": np.zeros(2, np.float32), "arg1": np.zeros(2, np.float32), "x": np.zeros(1)},
     "extra.npz: unexpected key(s) arg1, x: the entry computation takes 1 argument(s), keyed arg0 .. arg0"),
    ("f64.npz", {"arg0": np.zeros(2, np.float64)}, "expected element type f32 (float32), got float64"),
    ("lines.txt", b"\n f32[2] {1,\n  zz}\n", "lines.txt:3:3: error: expected a number for f32, got 'zz'\n  zz}\n  ^"),
    ("short.txt", b"f32[3] {1, 2}", "short.txt:1:8: error: literal does not match shape f32[3]"),
])
def test_hlo_run_bad_input_files(name: str, content: object, message: str, tmp_path: Path) -> None:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, np.ndarray):
        np.save(path, content, allow_pickle=True)
    elif content is None or isinstance(content, dict):
        with open(path, "wb") as f:
            np.savez(f, **(content or {}))
    rc, _, err = call(hlo_run.main, [str(_write(tmp_path, ONE_PARAMETER)), "--inputs", str(path), *INTERPRETER])
    check(rc, err, name)
    assert rc == 1 and message in err, err


def test_unwritable_outputs(tmp_path: Path) -> None:
    module = str(CORPUS / "no_args.hlo")
    for main, argv in ((hlo_opt.main, [module, "-o", "/nonexistent/dir/out.hlo"]),
                       (hlo_run.main, [module, "--outputs", "/nonexistent/dir/out.npz"]),
                       (hlo_opt.main, [str(tmp_path)])):
        rc, _, err = call(main, argv)
        check(rc, err, " ".join(argv))
        assert rc == 1 and ("cannot write '/nonexistent/dir/out" in err or "Is a directory" in err), err


def test_hlo_run_bad_flags() -> None:
    module = str(CORPUS / "mlp_forward.hlo")
    for flags in (["--replicas", "0"], ["--replicas", "-3"], ["--seed", "-1"], ["--bench", "0"],
                  ["--inputs", module, module]):
        rc, _, err = call(hlo_run.main, [module, "--random-inputs", *INTERPRETER, *flags])
        check(rc, err, " ".join(flags))


TUPLE_MODULE = """HloModule m
ENTRY e {
  p = f32[2,3] parameter(0)
  q = (s32[], f32[2]) parameter(1)
  g = s32[] get-tuple-element(q), index=0
  ROOT t = (f32[2,3], s32[]) tuple(p, g)
}
"""
GOOD = (np.zeros((2, 3), np.float32), (np.int32(1), np.zeros(2, np.float32)))


@pytest.mark.parametrize("args, message", [
    ((), "takes 2 argument(s), got 0"),
    (GOOD[:1], "takes 2 argument(s), got 1"),
    ((*GOOD, 1), "takes 2 argument(s), got 3"),
    ((np.zeros((3, 2), np.float32), GOOD[1]), "argument 0 (parameter 'p'): expected shape f32[2,3]"),
    ((np.zeros((2, 3), np.complex64), GOOD[1]), "argument 0 (parameter 'p'): expected element type f32"),
    ((np.zeros((2, 3), np.int32), GOOD[1]), "argument 0 (parameter 'p'): expected element type f32"),
    ((np.zeros((2, 3), np.float64), GOOD[1]), ("argument 0 (parameter 'p'): expected element type f32 (float32), got "
                                              "float64")),
    ((GOOD[0], (np.int64(1), GOOD[1][1])), ("argument 1 (parameter 'q')[0]: expected element type s32 (int32), got "
                                           "int64")),
    ((GOOD[0], np.zeros(2, np.float32)), "argument 1 (parameter 'q'): expected a tuple (s32[], f32[2])"),
    ((GOOD[0], (np.int32(1),)), "argument 1 (parameter 'q'): expected a tuple"),
    ((GOOD[0], ((np.int32(1),), np.zeros(2, np.float32))), "argument 1 (parameter 'q')[0]: expected shape s32[]"),
    ((GOOD[:1], GOOD[1]), "argument 0 (parameter 'p'): expected shape f32[2,3]"),
    (([[1.0, 2.0, 3.0], [4.0, 5.0]], GOOD[1]), "argument 0 (parameter 'p'): expected an array f32[2,3]"),
    ((None, GOOD[1]), "argument 0 (parameter 'p')"),
    ((GOOD[0], (2**40, np.zeros(2, np.float32))), "values of int64 do not fit element type s32"),
])
@pytest.mark.parametrize("backend", ["interpreter", "jit"])
def test_module_run_misuse(args: tuple, message: str, backend: str) -> None:
    module = hlo_mlir.load(TUPLE_MODULE)
    with pytest.raises(HloError) as e:
        module.run(*args, backend=backend)
    assert message in str(e.value)


def test_python_numbers_still_convert() -> None:
    """Lists and Python numbers carry no dtype: they take the parameter's (within its range)."""
    got = hlo_mlir.load(TUPLE_MODULE).run([[1.0, 2, 3], [4, 5, 6]], (7, [0.5, 1]))
    assert got[0].dtype == np.float32 and got[1] == np.int32(7)


@pytest.mark.parametrize("source", [lambda x: x, 3, b"HloModule m", None])
def test_load_of_a_non_string(source: object) -> None:
    with pytest.raises(HloError, match="load takes a path, or HLO text or MLIR text as a string; got ") as e:
        hlo_mlir.load(source)
    assert ("hlo_mlir.from_jax(f, *example_args)" in str(e.value)) == callable(source)


@pytest.mark.parametrize("options, message", [
    ({"replicas": 0}, "replicas must be an integer of at least 1, got 0"),
    ({"replicas": "2"}, "replicas must be an integer of at least 1, got '2'"),
    ({"backend": "gpu"}, "unknown backend 'gpu'"),
    ({"backend": "jit", "replicas": 0}, "replicas must be an integer of at least 1, got 0"),
])
def test_module_run_bad_options(options: dict, message: str) -> None:
    with pytest.raises(HloError, match=re.escape(message)):
        hlo_mlir.load(TUPLE_MODULE).run(*GOOD, **options)


def test_unverified_run_names_the_broken_rule(tmp_path: Path) -> None:
    """With --no-verify the interpreter meets ill-shaped instructions; it reports the shape rule they
    break rather than the NumPy failure they cause."""
    path = _write(tmp_path, "HloModule m\nENTRY e {\n  p = f32[2,3] parameter(0)\n  q = f32[3,2] parameter(1)\n"
                            "  ROOT a = f32[2,3] add(p, q)\n}\n")
    rc, _, err = call(hlo_run.main, [str(path), "--random-inputs", "--no-verify", *INTERPRETER])
    assert rc == 1
    assert "in.hlo:5:3: error: add 'a': operands must have the same shape, got f32[2,3] and f32[3,2]" in err


@pytest.mark.skipif(not xla_available(), reason="XLA oracle unavailable")
@pytest.mark.parametrize("operand, result, dims", [
    ("f32[1]", "f32[4]", "0"), ("f32[1,3]", "f32[4,3]", "0,1"), ("f32[1,1]", "f32[4,5]", "0,1"),
    ("f32[3,1]", "f32[2,3,5]", "1,2"), ("s8[1]", "s8[7]", "0"), ("pred[1]", "pred[7]", "0"), ("f32[1]", "f32[1,1]", "1"),
])
def test_degenerate_broadcast_matches_xla(operand: str, result: str, dims: str) -> None:
    """A size-1 operand dimension stretched to a longer result dimension (the JIT's lowering failed to verify)."""
    text = f"HloModule m\nENTRY e {{\n  p = {operand} parameter(0)\n  ROOT b = {result} broadcast(p), dimensions={{{dims}}}\n}}\n"
    shape = [int(d) for d in re.findall(r"\d+", operand.split("[")[1])]
    x = (np.arange(int(np.prod(shape))) + 1).reshape(shape).astype(np.bool_ if operand.startswith("pred") else
                                                                   np.int8 if operand.startswith("s8") else np.float32)
    want = run_xla(text, [x])[0]
    for backend in ("interpreter", "jit"):
        got = hlo_mlir.load(text).run(x, backend=backend)[0]
        assert got.shape == want.shape and got.tobytes() == want.tobytes(), backend


def test_hlo_opt_output_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """-o onto its own input works, and a write failing halfway leaves the old file whole (no temporary)."""
    import pathlib

    path = _write(tmp_path, ONE_PARAMETER)
    rc, _, err = call(hlo_opt.main, [str(path), "-o", str(path)])
    assert rc == 0, err
    assert "parameter(0)" in path.read_text()
    before = path.read_text()

    def half_written(self: pathlib.Path, text: str, *args: object, **kwargs: object) -> int:
        with open(self, "w") as f:
            f.write(text[: len(text) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pathlib.Path, "write_text", half_written)
    rc, _, err = call(hlo_opt.main, [str(path), "-o", str(path)])
    assert rc == 1 and "cannot write" in err and "No space left on device" in err
    assert path.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]
