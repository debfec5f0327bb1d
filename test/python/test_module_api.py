"""`hlo_mlir.load` on odd sources: errors are HloError, never a bare OSError."""

import pytest

import hlo_mlir


def test_long_one_line_string_is_parsed_as_text() -> None:
    with pytest.raises(hlo_mlir.HloError, match=r"<string>:1:\d+: error"):
        hlo_mlir.load("x" * 5000)


def test_directory_is_not_read_as_a_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(hlo_mlir.HloError):
        hlo_mlir.load(str(tmp_path))
