"""`hlo_mlir.load` on odd sources: errors are HloError, never a bare OSError."""

import pytest

import hlo_mlir


def test_long_one_line_string_is_parsed_as_text() -> None:
    with pytest.raises(hlo_mlir.HloError, match=r"<string>:1:\d+: error"):
        hlo_mlir.load("x" * 5000)


def test_directory_is_not_read_as_a_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(hlo_mlir.HloError):
        hlo_mlir.load(str(tmp_path))


TUPLE_PARAM = """HloModule m
ENTRY e {
  p = (f32[2], s32[]) parameter(0)
  a = f32[2] get-tuple-element(p), index=0
  ROOT n = f32[2] negate(a)
}"""


def test_tuple_parameter_takes_a_nested_tuple() -> None:
    import numpy as np

    (out,) = hlo_mlir.load(TUPLE_PARAM).run((np.array([1, 2], np.float32), np.int32(3)))
    np.testing.assert_array_equal(out, [-1, -2])


def test_tuple_parameter_element_is_checked() -> None:
    import numpy as np

    with pytest.raises(hlo_mlir.HloError, match=r"argument 0 \(parameter 'p'\)\[1\]: expected shape s32\[\]"):
        hlo_mlir.load(TUPLE_PARAM).run((np.array([1, 2], np.float32), np.zeros(3, np.int32)))
