"""bf16 and the other ml_dtypes types across .npy/.npz files (hlo-run --inputs/--outputs).

Why: NumPy cannot name ml_dtypes types in .npy headers; it writes an ml_dtypes array as raw bytes
(`V2`, `V1`) or, for float8_e5m2, as `<f1`, which it cannot even read back.  Users also save bit
patterns as the same-width unsigned integers.  Every one of these forms must feed a parameter, and
outputs must load back to the right values (`import ml_dtypes; np.load(...)`).
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from hlo_mlir.tools.hlo_run import main

HLO = """HloModule m
ENTRY e {
  a = bf16[3] parameter(0)
  b = f8e4m3fn[2] parameter(1)
  c = s4[2] parameter(2)
  d = f8e5m2[2] parameter(3)
  ROOT t = (bf16[3], f8e4m3fn[2], s4[2], f8e5m2[2]) tuple(a, b, c, d)
}
"""

VALUES = [
    np.array([1.5, -2, 3], dtype=ml_dtypes.bfloat16),
    np.array([0.5, 448], dtype=ml_dtypes.float8_e4m3fn),
    np.array([-1, 7], dtype=ml_dtypes.int4),
    np.array([2, -0.25], dtype=ml_dtypes.float8_e5m2),
]


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def _run(tmp_path: Path, inputs: list[str]) -> dict[str, np.ndarray]:
    module = tmp_path / "m.hlo"
    module.write_text(HLO)
    out = tmp_path / "out.npz"
    assert main([str(module), "--backend", "interpreter", "--inputs", *inputs, "--outputs", str(out)]) == 0
    with np.load(out) as data:
        return {k: data[k] for k in data.files}


def _check(outputs: dict[str, np.ndarray]) -> None:
    for i, want in enumerate(VALUES):
        got = outputs[f"out{i}"]
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("form", ["ml_dtypes", "bits"])
def test_npz_inputs(tmp_path: Path, form: str) -> None:
    path = tmp_path / "in.npz"
    np.savez(path, **{f"arg{i}": v if form == "ml_dtypes" else _bits(v) for i, v in enumerate(VALUES)})
    _check(_run(tmp_path, [str(path)]))


def test_npy_inputs_mixed_forms(tmp_path: Path) -> None:
    paths = []
    for i, v in enumerate(VALUES):
        paths.append(str(tmp_path / f"a{i}.npy"))
        np.save(paths[-1], v if i % 2 == 0 else _bits(v))
    _check(_run(tmp_path, paths))


def test_outputs_feed_back(tmp_path: Path) -> None:
    path = tmp_path / "in.npz"
    np.savez(path, **{f"arg{i}": v for i, v in enumerate(VALUES)})
    first = _run(tmp_path, [str(path)])
    again = tmp_path / "again.npz"
    np.savez(again, **{f"arg{i}": first[f"out{i}"] for i in range(len(VALUES))})
    _check(_run(tmp_path, [str(again)]))


def test_wrong_type_names_the_parameter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    module = tmp_path / "m.hlo"
    module.write_text(HLO)
    path = tmp_path / "in.npz"
    np.savez(path, arg0=np.zeros(3, np.float32), arg1=_bits(VALUES[1]), arg2=_bits(VALUES[2]), arg3=_bits(VALUES[3]))
    assert main([str(module), "--backend", "interpreter", "--inputs", str(path)]) == 1
    assert "parameter 'a'" in capsys.readouterr().err
