"""HLO attributes as MLIR attributes: one kind per attribute name, serving three directions.

Each kind turns the parsed text value into an MLIR attribute (import), the MLIR attribute back
into HLO text (export), and the MLIR attribute into the plain Python value passes and the
interpreter read (decode).  Attributes the compiler does not interpret (metadata, sharding,
backend_config, frontend_attributes, unknown names) are kept verbatim as strings.
"""

from __future__ import annotations

import re
from typing import Any

from mlir import ir

from hlo_mlir.attr_types import ConvDims, Window
from hlo_mlir.syntax import Value


class AttrError(Exception):
    """A malformed attribute value; `pos` is where, for the diagnostic."""

    def __init__(self, message: str, value: Value) -> None:
        super().__init__(message)
        self.value = value


def _i64(v: int) -> ir.Attribute:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), v)


def _int(tok: Value, what: str) -> int:
    if tok.kind != "atom" or not re.fullmatch(r"-?[0-9]+", tok.text):
        raise AttrError(f"expected {what}, got '{tok.text or tok.kind}'", tok)
    return int(tok.text)


def _got(v: Value) -> str:
    """How a value reads in a message: its text, shortened to one line."""
    text = v.text.split("\n", 1)[0]
    return f"'{text[:40]}...'" if len(text) > 40 or text != v.text else f"'{text}'"


def _brace(v: Value, what: str) -> Value:
    if v.kind != "brace":
        raise AttrError(f"expected {what}, got {_got(v)}", v)
    return v


class Kind:
    """How one attribute is written, stored and read."""

    description = "a value"

    def encode(self, v: Value, raw: str) -> ir.Attribute:
        raise NotImplementedError

    def export(self, a: ir.Attribute) -> str:
        raise NotImplementedError

    def decode(self, a: ir.Attribute) -> Any:
        raise NotImplementedError

    def from_value(self, value: Any) -> ir.Attribute:
        """The inverse of `decode`: what passes and the builder use to create attributes."""
        raise NotImplementedError


class Raw(Kind):
    """Kept verbatim: exported exactly as written."""

    def encode(self, v: Value, raw: str) -> ir.Attribute:
        return ir.StringAttr.get(raw)

    def from_value(self, value: Any) -> ir.Attribute:
        return ir.StringAttr.get(str(value))

    def export(self, a: ir.Attribute) -> str:
        return ir.StringAttr(a).value

    def decode(self, a: ir.Attribute) -> Any:
        return ir.StringAttr(a).value


class Ints(Kind):
    description = "a list of integers like {0,1}"

    def encode(self, v: Value, raw: str) -> ir.Attribute:
        b = _brace(v, f"{self.description}")
        return ir.DenseI64ArrayAttr.get([_int(t, "an integer") for t in b.items()])

    def export(self, a: ir.Attribute) -> str:
        return "{" + ",".join(str(x) for x in ir.DenseI64ArrayAttr(a)) + "}"

    def decode(self, a: ir.Attribute) -> Any:
        return tuple(ir.DenseI64ArrayAttr(a))

    def from_value(self, value: Any) -> ir.Attribute:
        return ir.DenseI64ArrayAttr.get([int(x) for x in value])


class IntsOrLists(Ints):
    """`{1,2}` (gather) or `{{1,2},{3,4}}` (collective-permute's in-place slice sizes)."""

    description = "a list of integers like {0,1} or of such lists"

    def encode(self, v: Value, raw: str) -> ir.Attribute:
        items = _brace(v, self.description).items()
        if items and all(t.kind == "brace" for t in items):
            return ir.ArrayAttr.get([Ints.encode(self, t, t.text) for t in items])
        return Ints.encode(self, v, raw)

    def export(self, a: ir.Attribute) -> str:
        if isinstance(a, ir.ArrayAttr):
            return "{" + ",".join(Ints.export(self, x) for x in a) + "}"
        return Ints.export(self, a)

    def decode(self, a: ir.Attribute) -> Any:
        if isinstance(a, ir.ArrayAttr):
            return tuple(Ints.decode(self, x) for x in a)
        return Ints.decode(self, a)

    def from_value(self, value: Any) -> ir.Attribute:
        if value and all(isinstance(x, (tuple, list)) for x in value):
            return ir.ArrayAttr.get([Ints.from_value(self, x) for x in value])
        return Ints.from_value(self, value)


class Int(Kind):
    description = "an integer"

    def encode(self, v: Value, raw: str) -> ir.Attribute:
        return _i64(_int(v, self.description))

    def export(self, a: ir.Attribute) -> str:
        return str(ir.IntegerAttr(a).value)

    def decode(self, a: ir.Attribute) -> Any:
        return ir.IntegerAttr(a).value

    def from_value(self, value: Any) -> ir.Attribute:
        return _i64(int(value))


class Float(Kind):
    description = "a floating-point number"

    def encode(self, v: Value, raw: str) -> ir.Attribute:
        try:
            return ir.FloatAttr.get_f64(float(v.text))
        except ValueError:
            raise AttrError(f"expected {self.description}, got '{v.text or v.kind}'", v) from None

    def export(self, a: ir.Attribute) -> str:
        return repr(ir.FloatAttr(a).value)

    def decode(self, a: ir.Attribute) -> Any:
        return ir.FloatAttr(a).value

    def from_value(self, value: Any) -> ir.Attribute:
        return ir.FloatAttr.get_f64(float(value))


class Bool(Kind):
    description = "true or false"

    def encode(self, v: Value, raw: str) -> ir.Attribute:
        if v.kind != "atom" or v.text not in ("true", "false"):
            raise AttrError(f"expected {self.description}", v)
        return ir.BoolAttr.get(v.text == "true")

    def export(self, a: ir.Attribute) -> str:
        return "true" if ir.BoolAttr(a).value else "false"

    def decode(self, a: ir.Attribute) -> Any:
        return ir.BoolAttr(a).value

    def from_value(self, value: Any) -> ir.Attribute:
        return ir.BoolAttr.get(bool(value))


class Enum(Kind):
    """A bare identifier from a fixed set (or any identifier when `values` is empty)."""

    def __init__(self, *values: str) -> None:
        self.values = values
        self.description = "one of " + ", ".join(values) if values else "an identifier"

    def encode(self, v: Value, raw: str) -> ir.Attribute:
        if v.kind != "atom" or (self.values and v.text not in self.values):
            raise AttrError(f"expected {self.description}, got '{v.text or v.kind}'", v)
        return ir.StringAttr.get(v.text)

    def export(self, a: ir.Attribute) -> str:
        return ir.StringAttr(a).value

    def decode(self, a: ir.Attribute) -> Any:
        return ir.StringAttr(a).value

    def from_value(self, value: Any) -> ir.Attribute:
        if self.values and value not in self.values:
            raise ValueError(f"expected {self.description}, got '{value}'")
        return ir.StringAttr.get(str(value))


def unquote(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text[1:-1])


def quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class Str(Kind):
    description = 'a string like "..."'

    def encode(self, v: Value, raw: str) -> ir.Attribute:
        if v.kind != "string":
            raise AttrError(f"expected {self.description}", v)
        return ir.StringAttr.get(unquote(v.text))

    def export(self, a: ir.Attribute) -> str:
        return quote(ir.StringAttr(a).value)

    def decode(self, a: ir.Attribute) -> Any:
        return ir.StringAttr(a).value

    def from_value(self, value: Any) -> ir.Attribute:
        return ir.StringAttr.get(str(value))


def _comp_name(v: Value) -> str:
    if v.kind != "atom":
        raise AttrError("expected a computation name like %add", v)
    return v.text[1:] if v.text.startswith("%") else v.text


class Comp(Kind):
    description = "a computation name"

    def encode(self, v: Value, raw: str) -> ir.Attribute:
        return ir.FlatSymbolRefAttr.get(_comp_name(v))

    def export(self, a: ir.Attribute) -> str:
        return "%" + ir.FlatSymbolRefAttr(a).value

    def decode(self, a: ir.Attribute) -> Any:
        return ir.FlatSymbolRefAttr(a).value

    def from_value(self, value: Any) -> ir.Attribute:
        return ir.FlatSymbolRefAttr.get(str(value).lstrip("%"))


class Comps(Kind):
    description = "a list of computations like {%a, %b}"

    def encode(self, v: Value, raw: str) -> ir.Attribute:
        b = _brace(v, self.description)
        return ir.ArrayAttr.get([ir.FlatSymbolRefAttr.get(_comp_name(t)) for t in b.items()])

    def export(self, a: ir.Attribute) -> str:
        return "{" + ", ".join("%" + ir.FlatSymbolRefAttr(x).value for x in ir.ArrayAttr(a)) + "}"

    def decode(self, a: ir.Attribute) -> Any:
        return tuple(ir.FlatSymbolRefAttr(x).value for x in ir.ArrayAttr(a))

    def from_value(self, value: Any) -> ir.Attribute:
        return ir.ArrayAttr.get([ir.FlatSymbolRefAttr.get(str(v).lstrip("%")) for v in value])


_WINDOW_KEYS = ("size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal")


class WindowKind(Kind):
    description = "a window like {size=3x3 stride=2x2 pad=1_1x1_1}"

    def encode(self, v: Value, raw: str) -> ir.Attribute:
        items = _brace(v, self.description).children
        fields: dict[str, ir.Attribute] = {}
        i = 0
        while i < len(items):
            key = items[i]
            if key.kind != "atom" or key.text not in _WINDOW_KEYS:
                raise AttrError(f"unknown window field '{key.text}'; expected one of {', '.join(_WINDOW_KEYS)}", key)
            if i + 2 >= len(items) or items[i + 1].kind != "eq" or items[i + 2].kind != "atom":
                raise AttrError(f"expected {key.text}=<value>", key)
            val = items[i + 2]
            try:
                if key.text == "pad":
                    nums = [int(x) for part in val.text.split("x") for x in _pad_pair(part)]
                else:
                    nums = [int(x) for x in val.text.split("x")]
            except ValueError:
                raise AttrError(f"malformed window {key.text} '{val.text}'", val) from None
            fields[key.text] = ir.DenseI64ArrayAttr.get(nums)
            i += 3
        ranks = {len(ir.DenseI64ArrayAttr(a)) // (2 if k == "pad" else 1) for k, a in fields.items()}
        if len(ranks) > 1:
            raise AttrError("window fields have different numbers of dimensions", v)
        return ir.DictAttr.get(fields)

    def export(self, a: ir.Attribute) -> str:
        d = ir.DictAttr(a)
        parts = []
        for key in _WINDOW_KEYS:
            if key not in d:
                continue
            nums = list(ir.DenseI64ArrayAttr(d[key]))
            if key == "pad":
                text = "x".join(f"{nums[i]}_{nums[i + 1]}" for i in range(0, len(nums), 2))
            else:
                text = "x".join(str(n) for n in nums)
            parts.append(f"{key}={text}")
        return "{" + " ".join(parts) + "}"

    def decode(self, a: ir.Attribute) -> Any:
        d = ir.DictAttr(a)
        get = {k: tuple(ir.DenseI64ArrayAttr(d[k])) for k in _WINDOW_KEYS if k in d}
        size = get.get("size", ())
        n = len(size)
        pad = get.get("pad", (0,) * (2 * n))
        return Window(
            size,
            get.get("stride", (1,) * n),
            pad[0::2],
            pad[1::2],
            get.get("lhs_dilate", (1,) * n),
            get.get("rhs_dilate", (1,) * n),
            tuple(bool(x) for x in get.get("rhs_reversal", (0,) * n)),
        )

    def from_value(self, value: Any) -> ir.Attribute:
        """Fields at their default are left out, as XLA prints them."""
        w: Window = value
        pad = [p for lo, hi in zip(w.pad_low, w.pad_high) for p in (lo, hi)]
        fields = {
            "size": list(w.size),
            "stride": list(w.stride) if any(x != 1 for x in w.stride) else None,
            "pad": pad if any(pad) else None,
            "lhs_dilate": list(w.lhs_dilate) if any(x != 1 for x in w.lhs_dilate) else None,
            "rhs_dilate": list(w.rhs_dilate) if any(x != 1 for x in w.rhs_dilate) else None,
            "rhs_reversal": [int(x) for x in w.reversal] if any(w.reversal) else None,
        }
        return ir.DictAttr.get({k: ir.DenseI64ArrayAttr.get(v) for k, v in fields.items() if v is not None})


def _pad_pair(part: str) -> list[str]:
    m = re.fullmatch(r"(-?[0-9]+)_(-?[0-9]+)", part)
    if not m:
        raise ValueError(part)
    return [m.group(1), m.group(2)]


def parse_dim_labels(text: str) -> ConvDims:
    """`b01f_01io->b01f` -> ConvDims; raises ValueError on a malformed string.  A `?` is a dimension
    without a role (XLA accepts it; only custom-calls use it)."""
    m = re.fullmatch(r"([a-z0-9?]+)_([a-z0-9?]+)->([a-z0-9?]+)", text)
    if not m:
        raise ValueError("dim_labels must look like b01f_01io->b01f")
    lhs, rhs, out = m.groups()

    def spatial(s: str) -> tuple[int, ...]:
        digits = sorted((int(c), i) for i, c in enumerate(s) if c.isdigit())
        if [d for d, _ in digits] != list(range(len(digits))):
            raise ValueError(f"spatial dimensions of '{s}' must be 0..n-1")
        return tuple(i for _, i in digits)

    for s, letters in ((lhs, "bf"), (rhs, "io"), (out, "bf")):
        for ch in letters:
            if s.count(ch) != 1:
                raise ValueError(f"'{s}' must contain exactly one '{ch}'")
    if not len(lhs) == len(rhs) == len(out):
        raise ValueError("lhs, rhs and output labels must have the same rank")
    return ConvDims(
        lhs.index("b"), lhs.index("f"), spatial(lhs),
        rhs.index("i"), rhs.index("o"), spatial(rhs),
        out.index("b"), out.index("f"), spatial(out),
    )  # fmt: skip


def format_dim_labels(d: ConvDims) -> str:
    """The inverse of `parse_dim_labels`."""

    def side(rank: int, first: tuple[int, str], second: tuple[int, str], spatial: tuple[int, ...]) -> str:
        chars = [""] * rank
        chars[first[0]], chars[second[0]] = first[1], second[1]
        for i, dim in enumerate(spatial):
            chars[dim] = str(i)
        return "".join(chars)

    rank = len(d.input_spatial) + 2
    lhs = side(rank, (d.input_batch, "b"), (d.input_feature, "f"), d.input_spatial)
    rhs = side(rank, (d.kernel_input_feature, "i"), (d.kernel_output_feature, "o"), d.kernel_spatial)
    out = side(rank, (d.output_batch, "b"), (d.output_feature, "f"), d.output_spatial)
    return f"{lhs}_{rhs}->{out}"


class DimLabels(Kind):
    description = "convolution dim_labels like b01f_01io->b01f"

    def encode(self, v: Value, raw: str) -> ir.Attribute:
        try:
            parse_dim_labels(v.text if v.kind == "atom" else "")
        except ValueError as e:
            raise AttrError(f"bad dim_labels: {e}", v) from None
        return ir.StringAttr.get(v.text)

    def export(self, a: ir.Attribute) -> str:
        return ir.StringAttr(a).value

    def decode(self, a: ir.Attribute) -> Any:
        return parse_dim_labels(ir.StringAttr(a).value)

    def from_value(self, value: Any) -> ir.Attribute:
        return ir.StringAttr.get(value if isinstance(value, str) else format_dim_labels(value))


class SliceKind(Kind):
    description = "slice ranges like {[0:2], [1:7:2]}"

    def encode(self, v: Value, raw: str) -> ir.Attribute:
        nums: list[int] = []
        for r in _brace(v, self.description).items():
            if r.kind != "bracket":
                raise AttrError(f"expected a range like [0:2], got '{r.text}'", r)
            parts = [p for p in r.children if p.kind != "colon"]
            if len(parts) not in (2, 3):
                raise AttrError("expected [start:limit] or [start:limit:stride]", r)
            vals = [_int(p, "an integer") for p in parts]
            nums += vals + ([1] if len(vals) == 2 else [])
        return ir.DenseI64ArrayAttr.get(nums)

    def export(self, a: ir.Attribute) -> str:
        n = list(ir.DenseI64ArrayAttr(a))
        rs = [f"[{n[i]}:{n[i + 1]}]" if n[i + 2] == 1 else f"[{n[i]}:{n[i + 1]}:{n[i + 2]}]" for i in range(0, len(n), 3)]
        return "{" + ", ".join(rs) + "}"

    def decode(self, a: ir.Attribute) -> Any:
        n = list(ir.DenseI64ArrayAttr(a))
        return tuple((n[i], n[i + 1], n[i + 2]) for i in range(0, len(n), 3))

    def from_value(self, value: Any) -> ir.Attribute:
        return ir.DenseI64ArrayAttr.get([int(x) for triple in value for x in triple])


class Padding(Kind):
    description = "a padding config like 0_1x2_2_1"

    def encode(self, v: Value, raw: str) -> ir.Attribute:
        if v.kind == "brace" and not v.items():  # a scalar's (XLA writes nothing there and cannot read it back)
            return ir.DenseI64ArrayAttr.get([])
        if v.kind != "atom":
            raise AttrError(f"expected {self.description}", v)
        nums: list[int] = []
        for part in v.text.split("x"):
            m = re.fullmatch(r"(-?[0-9]+)_(-?[0-9]+)(?:_(-?[0-9]+))?", part)
            if not m:
                raise AttrError(f"malformed padding '{part}': expected low_high or low_high_interior", v)
            nums += [int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)]
        return ir.DenseI64ArrayAttr.get(nums)

    def export(self, a: ir.Attribute) -> str:
        n = list(ir.DenseI64ArrayAttr(a))
        if not n:
            return "{}"
        interior = any(n[i + 2] for i in range(0, len(n), 3))
        return "x".join(
            f"{n[i]}_{n[i + 1]}" + (f"_{n[i + 2]}" if interior else "") for i in range(0, len(n), 3)
        )

    def decode(self, a: ir.Attribute) -> Any:
        n = list(ir.DenseI64ArrayAttr(a))
        return tuple((n[i], n[i + 1], n[i + 2]) for i in range(0, len(n), 3))

    def from_value(self, value: Any) -> ir.Attribute:
        return ir.DenseI64ArrayAttr.get([int(x) for triple in value for x in triple])


def expand_iota_groups(text: str) -> tuple[tuple[int, ...], ...]:
    """`[2,4]<=[4,2]T(1,0)`: iota over the reshape dims, transposed, reshaped to the group shape."""
    import numpy as np

    m = re.fullmatch(r"\[([0-9,\s]*)\]<=\[([0-9,\s]*)\](?:T\(([0-9,\s]*)\))?", text)
    if not m:
        raise ValueError("malformed iota replica groups")
    shape = [int(x) for x in m.group(1).split(",") if x.strip()]
    dims = [int(x) for x in m.group(2).split(",") if x.strip()]
    arr = np.arange(int(np.prod(dims))).reshape(dims)
    if m.group(3) is not None:
        perm = [int(x) for x in m.group(3).split(",") if x.strip()]
        if sorted(perm) != list(range(len(dims))):
            raise ValueError("iota replica groups: T(...) must be a permutation of the reshape dims")
        arr = arr.transpose(perm)
    if len(shape) != 2 or int(np.prod(shape)) != arr.size:
        raise ValueError("iota replica groups: [groups,size] must hold as many ids as the iota")
    return tuple(tuple(int(x) for x in row) for row in arr.reshape(shape))


_MESH = re.compile(r"mesh\[((?:\s*'[^']*'\s*=\s*[0-9]+\s*,?)*)\]\s*\{((?:\s*'[^']*'\s*,?)*)\}")


def expand_mesh_groups(text: str) -> tuple[tuple[int, ...], ...]:
    """`mesh['x'=2,'y'=2] {'y'}` (XLA's SPMD partitioner): devices numbered row-major over the mesh;
    each group holds the devices that differ only along the listed axes."""
    import numpy as np

    m = _MESH.fullmatch(text.strip())
    if not m:
        raise ValueError("malformed mesh replica groups: expected mesh['axis'=size,...] {'axis',...}")
    axes = [(a, int(n)) for a, n in re.findall(r"'([^']*)'\s*=\s*([0-9]+)", m.group(1))]
    names = [a for a, _ in axes]
    chosen = re.findall(r"'([^']*)'", m.group(2))
    for a in chosen:
        if a not in names:
            raise ValueError(f"mesh replica groups: unknown axis '{a}' (the mesh has {', '.join(names)})")
    if len(set(chosen)) != len(chosen):
        raise ValueError("mesh replica groups: an axis is listed twice")
    ids = np.arange(int(np.prod([n for _, n in axes], dtype=np.int64))).reshape([n for _, n in axes])
    inner = [names.index(a) for a in chosen]
    outer = [i for i in range(len(names)) if i not in inner]
    size = int(np.prod([axes[i][1] for i in inner], dtype=np.int64))
    return tuple(tuple(int(x) for x in row) for row in ids.transpose(outer + inner).reshape(-1, size))


class ReplicaGroups(Kind):
    description = "replica groups like {{0,1},{2,3}}, [2,2]<=[4] or mesh['x'=2,'y'=2] {'y'}"

    def encode(self, v: Value, raw: str) -> ir.Attribute:
        if v.kind == "atom" and v.text.startswith("mesh["):
            try:
                expand_mesh_groups(v.text)
            except ValueError as e:
                raise AttrError(str(e), v) from None
            return ir.StringAttr.get(v.text)
        if v.kind == "iota":
            try:
                expand_iota_groups(v.text)
            except ValueError as e:
                raise AttrError(str(e), v) from None
            return ir.StringAttr.get(v.text)
        groups = []
        for g in _brace(v, self.description).items():
            groups.append(ir.DenseI64ArrayAttr.get([_int(t, "a replica id") for t in _brace(g, "a group like {0,1}").items()]))
        return ir.ArrayAttr.get(groups)

    def export(self, a: ir.Attribute) -> str:
        if isinstance(a, ir.StringAttr):
            return ir.StringAttr(a).value
        return "{" + ",".join("{" + ",".join(str(x) for x in ir.DenseI64ArrayAttr(g)) + "}" for g in ir.ArrayAttr(a)) + "}"

    def decode(self, a: ir.Attribute) -> Any:
        if isinstance(a, ir.StringAttr):
            text = ir.StringAttr(a).value
            return expand_mesh_groups(text) if text.startswith("mesh[") else expand_iota_groups(text)
        return tuple(tuple(ir.DenseI64ArrayAttr(g)) for g in ir.ArrayAttr(a))

    def from_value(self, value: Any) -> ir.Attribute:
        return ir.ArrayAttr.get([ir.DenseI64ArrayAttr.get([int(x) for x in g]) for g in value])


class Pairs(Kind):
    description = "pairs like {{0,1},{1,2}}"

    def encode(self, v: Value, raw: str) -> ir.Attribute:
        nums: list[int] = []
        for g in _brace(v, self.description).items():
            pair = [_int(t, "a replica id") for t in _brace(g, "a pair like {0,1}").items()]
            if len(pair) != 2:
                raise AttrError("expected a pair like {0,1}", g)
            nums += pair
        return ir.DenseI64ArrayAttr.get(nums)

    def export(self, a: ir.Attribute) -> str:
        n = list(ir.DenseI64ArrayAttr(a))
        return "{" + ",".join(f"{{{n[i]},{n[i + 1]}}}" for i in range(0, len(n), 2)) + "}"

    def decode(self, a: ir.Attribute) -> Any:
        n = list(ir.DenseI64ArrayAttr(a))
        return tuple((n[i], n[i + 1]) for i in range(0, len(n), 2))

    def from_value(self, value: Any) -> ir.Attribute:
        return ir.DenseI64ArrayAttr.get([int(x) for pair in value for x in pair])


class Words(Kind):
    description = "a list like {high,default}"

    def encode(self, v: Value, raw: str) -> ir.Attribute:
        items = _brace(v, self.description).items()
        for t in items:
            if t.kind != "atom":
                raise AttrError(f"expected {self.description}", t)
        return ir.ArrayAttr.get([ir.StringAttr.get(t.text) for t in items])

    def export(self, a: ir.Attribute) -> str:
        return "{" + ",".join(ir.StringAttr(x).value for x in ir.ArrayAttr(a)) + "}"

    def decode(self, a: ir.Attribute) -> Any:
        return tuple(ir.StringAttr(x).value for x in ir.ArrayAttr(a))

    def from_value(self, value: Any) -> ir.Attribute:
        return ir.ArrayAttr.get([ir.StringAttr.get(str(x)) for x in value])


class Checked(Raw):
    """Kept verbatim like Raw, after checking the value's form the way XLA's parser does."""

    def check(self, v: Value) -> None:
        raise NotImplementedError

    def encode(self, v: Value, raw: str) -> ir.Attribute:
        self.check(v)
        return super().encode(v, raw)


def _shape_index(v: Value, what: str) -> None:
    """`{}` or `{0, 1}`: a tuple shape index."""
    for item in _brace(v, f"{what} like {{0, 1}}").items():
        _int(item, "an integer in the shape index")


def _param_and_index(v: Value, kinds: tuple[str, ...]) -> None:
    """`(parameter, {shape index}[, kind])`."""
    if v.kind != "paren":
        raise AttrError(f"expected (parameter, {{shape index}}), got {_got(v)}", v)
    parts = [g for g in v.groups()]
    if not 2 <= len(parts) <= (3 if kinds else 2) or any(len(g) != 1 for g in parts):
        raise AttrError("expected (parameter, {shape index}" + (", kind)" if kinds else ")"), v)
    _int(parts[0][0], "a parameter number")
    _shape_index(parts[1][0], "a parameter shape index")
    if len(parts) == 3 and (parts[2][0].kind != "atom" or parts[2][0].text not in kinds):
        raise AttrError(f"expected one of {', '.join(kinds)}", parts[2][0])


class Aliasing(Checked):
    """`input_output_alias={ {0}: (0, {}, may-alias), ... }`."""

    def check(self, v: Value) -> None:
        for group in _brace(v, "aliases like { {0}: (0, {}) }").groups():
            if group[0].kind != "brace":
                raise AttrError(f"expected an output shape index like {{0}}, got {_got(group[0])}", group[0])
            _shape_index(group[0], "an output shape index")
            if len(group) < 3 or group[1].kind != "colon":
                raise AttrError("expected ':' after the output shape index", group[min(1, len(group) - 1)])
            _param_and_index(group[2], ("may-alias", "must-alias"))
            if len(group) > 3:
                raise AttrError(f"expected ',' or '}}' after an alias, got {_got(group[3])}", group[3])


class BufferDonor(Checked):
    """`buffer_donor={ (0, {}), (1, {0}) }`."""

    def check(self, v: Value) -> None:
        for group in _brace(v, "donors like { (0, {}) }").groups():
            _param_and_index(group[0], ())
            if len(group) > 1:
                raise AttrError(f"expected ',' or '}}' after a donor, got {_got(group[1])}", group[1])


_ACCURACY_FIELDS = {"rtol": float, "atol": float, "ulps": int}


class ResultAccuracy(Checked):
    """`result_accuracy={mode=highest}` or `{tolerance={rtol=0.5, atol=1.0, ulps=2}}`."""

    def check(self, v: Value) -> None:
        items = _brace(v, "{mode=...} or {tolerance={...}}").children
        if len(items) != 3 or items[0].kind != "atom" or items[1].kind != "eq":
            raise AttrError("expected {mode=default|highest} or {tolerance={rtol=..., atol=..., ulps=...}}", items[0] if items else v)
        key, value = items[0], items[2]
        if key.text == "mode":
            if value.kind != "atom" or value.text.lower() not in ("default", "highest"):
                raise AttrError(f"expected the mode default or highest, got {_got(value)}", value)
        elif key.text == "tolerance":
            for group in _brace(value, "tolerances like {rtol=0.5, ulps=2}").groups():
                name = group[0]
                if name.text not in _ACCURACY_FIELDS or len(group) != 3 or group[1].kind != "eq":
                    raise AttrError(f"expected rtol=, atol= or ulps=, got {_got(name)}", name)
                try:
                    _ACCURACY_FIELDS[name.text](group[2].text)
                except ValueError:
                    raise AttrError(f"malformed {name.text} {_got(group[2])}", group[2]) from None
        else:
            raise AttrError(f"expected mode or tolerance, got {_got(key)}", key)




RAW, INTS, INT, FLOAT, BOOL = Raw(), Ints(), Int(), Float(), Bool()
STR, COMP, COMPS, IDENT = Str(), Comp(), Comps(), Enum()

KINDS: dict[str, Kind] = {
    **{n: INTS for n in (
        "dimensions", "lhs_batch_dims", "rhs_batch_dims", "lhs_contracting_dims", "rhs_contracting_dims",
        "offset_dims", "collapsed_slice_dims", "start_index_map", "operand_batching_dims",
        "start_indices_batching_dims", "update_window_dims", "inserted_window_dims",
        "scatter_dims_to_operand_dims", "input_batching_dims", "scatter_indices_batching_dims",
        "dynamic_slice_sizes", "fft_length",
    )},
    **{n: INT for n in (
        "index", "iota_dimension", "index_vector_dim", "feature_group_count", "batch_group_count",
        "k", "channel_id", "exponent_bits", "mantissa_bits", "feature_index", "replica_count",
        "num_partitions", "split_count",
    )},
    **{n: BOOL for n in (
        "is_stable", "largest", "indices_are_sorted", "unique_indices", "use_global_device_ids",
        "constrain_layout", "is_host_transfer", "left_side", "lower", "unit_diagonal",
        "custom_call_has_side_effect", "is_composite", "is_scheduled",
    )},
    **{n: COMP for n in ("to_apply", "calls", "condition", "body", "true_computation",
                         "false_computation", "select", "scatter")},
    **{n: COMPS for n in ("branch_computations", "called_computations")},
    **{n: STR for n in ("custom_call_target", "infeed_config", "outfeed_config", "async_execution_thread")},
    "slice_sizes": IntsOrLists(),
    "epsilon": FLOAT,
    "direction": Enum("EQ", "NE", "LT", "LE", "GT", "GE"),
    "type": Enum("FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"),
    "distribution": Enum("rng_uniform", "rng_normal"),
    "fft_type": Enum("FFT", "IFFT", "RFFT", "IRFFT"),
    "transpose_a": Enum("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"),
    "algorithm": IDENT,
    "kind": IDENT,
    "api_version": Enum(
        "API_VERSION_ORIGINAL", "API_VERSION_STATUS_RETURNING", "API_VERSION_STATUS_RETURNING_UNIFIED",
        "API_VERSION_TYPED_FFI",
    ),
    "input_output_alias": Aliasing(),
    "buffer_donor": BufferDonor(),
    "result_accuracy": ResultAccuracy(),
    "custom_call_schedule": IDENT,
    "window": WindowKind(),
    "dim_labels": DimLabels(),
    "slice": SliceKind(),
    "padding": Padding(),
    "replica_groups": ReplicaGroups(),
    "source_target_pairs": Pairs(),
    "operand_precision": Words(),
}


def kind_of(name: str) -> Kind:
    return KINDS.get(name, RAW)


def encode_value(name: str, value: Any) -> ir.Attribute:
    """The MLIR attribute for a decoded Python value of attribute `name` (needs an active context)."""
    return kind_of(name).from_value(value)


def decode_all(attrs: ir.OpAttributeMap) -> dict[str, Any]:
    """Decoded HLO attributes of an op (internal `hlo.*` attributes excluded)."""
    out: dict[str, Any] = {}
    for name in attrs:
        if name.startswith("hlo.") or name == "value":
            continue
        out[name] = kind_of(name).decode(attrs[name])
    return out

