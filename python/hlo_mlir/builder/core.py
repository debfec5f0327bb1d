"""Builder, Value and Computation: the op-by-op construction of an HLO module in the `hlo` dialect.

A `Builder` owns one computation (a `func.func`); sub-builders made with `sub_builder` share the
module, so reducers, comparators and loop bodies are built with the same API. Every op goes through
`Builder.emit`, which takes the result type from the shape rules (`infer_result_type`) and turns a
broken rule into an `HloError` located at the user's Python call site. Results with `<=` bounds
keep them in the op's `hlo.shape` text, as the importer does, so they print and read back.
"""

from __future__ import annotations

import inspect
import linecache
import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
from mlir import ir
from mlir.dialects import func

import hlo_mlir
from hlo_mlir.diagnostics import HloError, SourceLocation
from hlo_mlir.dialects import MODULE_NAME, NAME, SHAPE, edit, from_mlir_type, layout, new_context, to_mlir_type
from hlo_mlir.dialects.attributes import quote
from hlo_mlir.dialects.shape_rules import ShapeError, Signature, infer_result_type
from hlo_mlir.frontend.literals import array_to_attr
from hlo_mlir.shape_text import ShapeError as TextShapeError
from hlo_mlir.shape_text import parse_array_shape, tuple_of
from hlo_mlir.module import Module
from hlo_mlir.types import BY_DTYPE, BY_HLO, ArrayType, ElementType, HloType, TokenType, TupleType

_PACKAGE_DIR = os.path.dirname(os.path.abspath(hlo_mlir.__file__))


def call_site() -> SourceLocation:
    """file:line:col of the innermost frame outside the hlo_mlir package (the user's call)."""
    frame = inspect.currentframe()
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return SourceLocation("<builder>", 1, 1)
    info = inspect.getframeinfo(frame, context=0)
    col = info.positions.col_offset if info.positions and info.positions.col_offset is not None else 0
    return SourceLocation(info.filename, info.lineno, col + 1)


def user_error(opcode: str, message: str) -> HloError:
    """`<file>:<line>:<col>: error: <opcode>: <message>` at the user's call site."""
    loc = call_site()
    source = "".join(linecache.getlines(loc.file)) or None
    return HloError(f"{opcode}: {message}", loc, source)


def to_type(shape: HloType | str, opcode: str = "shape") -> HloType:
    """A shape given as an `HloType` or as HLO shape text (`"f32[2,3]"`, `"(f32[], s32[4])"`)."""
    if not isinstance(shape, str):
        return shape
    try:
        return _parse_type(shape)
    except (TextShapeError, KeyError, ValueError) as e:
        raise user_error(opcode, f"bad shape {shape!r}: {e}") from None


def _parse_type(shape: str) -> HloType:
    text = shape.strip()
    if text.startswith("("):
        parts, depth, start = [], 0, 1
        for i, ch in enumerate(text):
            depth += ch in "([{"
            depth -= ch in ")]}"
            if (ch == "," and depth == 1) or (ch == ")" and depth == 0):
                if text[start:i].strip():
                    parts.append(_parse_type(text[start:i]))
                start = i + 1
        return tuple_of(parts)
    if text == "token[]":
        return TokenType()
    t, _ = parse_array_shape(text)
    return t


def element_type(dtype: Any) -> ElementType:
    """An element type from its HLO name (`"f32"`), an `ElementType` or a NumPy dtype."""
    if isinstance(dtype, ElementType):
        return dtype
    if isinstance(dtype, str) and dtype in BY_HLO:
        return BY_HLO[dtype]
    try:
        return BY_DTYPE[np.dtype(dtype)]
    except (TypeError, KeyError):
        raise user_error("element type", f"{dtype!r} is not an HLO element type or a NumPy dtype with one") from None


def has_bounds(t: HloType) -> bool:
    """`t` or one of its tuple elements has a `<=N` (bounded dynamic) dimension."""
    if isinstance(t, TupleType):
        return any(has_bounds(e) for e in t.elements)
    return isinstance(t, ArrayType) and any(t.bounded)


def frontend_attributes_text(attrs: Mapping[str, str]) -> str:
    """`{key="value",...}` with the keys sorted, as XLA prints frontend_attributes. Every value is
    quoted (XLA's parser reads quoted and bare `{...}` values alike; it prints the latter bare)."""
    return "{" + ",".join(f"{k}={quote(str(v))}" for k, v in sorted(attrs.items())) + "}"


CHANNEL_TYPES = ("DEVICE_TO_DEVICE", "DEVICE_TO_HOST", "HOST_TO_DEVICE")


@dataclass(frozen=True)
class ChannelHandle:
    """XLA's ChannelHandle: the `channel_id` that pairs a send with its recv, and the direction
    (DEVICE_TO_DEVICE for send/recv, DEVICE_TO_HOST / HOST_TO_DEVICE for host transfers)."""

    handle: int
    type: str = "DEVICE_TO_DEVICE"

    def __post_init__(self) -> None:
        if self.type not in CHANNEL_TYPES:
            raise user_error("channel", f"channel type must be one of {', '.join(CHANNEL_TYPES)}, got {self.type!r}")
        if not isinstance(self.handle, int) or self.handle < 1:
            raise user_error("channel", f"a channel handle is a positive integer, got {self.handle!r}")


@dataclass(frozen=True)
class Computation:
    """A finished sub-computation: what reduce, sort, while, call ... take as their `computation`."""

    name: str
    signature: Signature


class Value:
    """The result of one op (or a parameter) in a builder's computation.

    Operators follow XLA's rules, not NumPy's: `+ - * / % **`, `@` (dot), `& | ^ ~`, unary `-`
    and comparisons (`< <= > >= == !=` give pred arrays). Python scalars become constants of the
    other operand's element type and broadcast like any scalar.
    """

    __slots__ = ("builder", "ir")
    __hash__ = object.__hash__

    def __init__(self, builder: "Builder", value: ir.Value) -> None:
        self.builder = builder
        self.ir = value

    @property
    def type(self) -> HloType:
        if self.builder.dropped:  # its IR is gone: reading it would crash the bindings
            raise user_error("value", f"computation '{self.builder.name}' {self.builder.closed}")
        # bounds: see emit
        return layout.with_bounds(from_mlir_type(self.ir.type), edit.written(self.ir))

    @property
    def shape(self) -> tuple[int, ...]:
        t = self.type
        if not isinstance(t, ArrayType):
            raise TypeError(f"{t} is not an array")
        return t.dims

    @property
    def element(self) -> ElementType:
        t = self.type
        if not isinstance(t, ArrayType):
            raise TypeError(f"{t} is not an array")
        return t.element

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def name(self) -> str:
        """The HLO instruction name (a parameter's as given to `parameter`)."""
        for value, name, _ in self.builder.params:
            if value.ir == self.ir:
                return name
        return edit.name_of(self.ir)

    def __repr__(self) -> str:
        if self.builder.dropped:
            return f"Value(of dropped computation '{self.builder.name}')"
        return f"Value({self.name}: {self.type})"

    def _binary(self, opcode: str, other: Any, reflected: bool = False) -> "Value":
        from hlo_mlir.builder.elementwise import binary

        return binary(opcode, other, self) if reflected else binary(opcode, self, other)

    def _compare(self, other: Any, direction: str) -> "Value":
        from hlo_mlir.builder.elementwise import compare

        return compare(self, other, direction)

    def __add__(self, o: Any) -> "Value":
        return self._binary("add", o)

    def __radd__(self, o: Any) -> "Value":
        return self._binary("add", o, True)

    def __sub__(self, o: Any) -> "Value":
        return self._binary("subtract", o)

    def __rsub__(self, o: Any) -> "Value":
        return self._binary("subtract", o, True)

    def __mul__(self, o: Any) -> "Value":
        return self._binary("multiply", o)

    def __rmul__(self, o: Any) -> "Value":
        return self._binary("multiply", o, True)

    def __truediv__(self, o: Any) -> "Value":
        return self._binary("divide", o)

    def __rtruediv__(self, o: Any) -> "Value":
        return self._binary("divide", o, True)

    def __mod__(self, o: Any) -> "Value":
        return self._binary("remainder", o)

    def __rmod__(self, o: Any) -> "Value":
        return self._binary("remainder", o, True)

    def __pow__(self, o: Any) -> "Value":
        return self._binary("power", o)

    def __rpow__(self, o: Any) -> "Value":
        return self._binary("power", o, True)

    def __and__(self, o: Any) -> "Value":
        return self._binary("and", o)

    def __or__(self, o: Any) -> "Value":
        return self._binary("or", o)

    def __xor__(self, o: Any) -> "Value":
        return self._binary("xor", o)

    def __matmul__(self, o: "Value") -> "Value":
        from hlo_mlir.builder.compute import dot

        return dot(self, o)

    def __neg__(self) -> "Value":
        return self.builder.emit("negate", [self])

    def __invert__(self) -> "Value":
        return self.builder.emit("not", [self])

    def __lt__(self, o: Any) -> "Value":
        return self._compare(o, "LT")

    def __le__(self, o: Any) -> "Value":
        return self._compare(o, "LE")

    def __gt__(self, o: Any) -> "Value":
        return self._compare(o, "GT")

    def __ge__(self, o: Any) -> "Value":
        return self._compare(o, "GE")

    def __eq__(self, o: Any) -> "Value":  # type: ignore[override]
        return self._compare(o, "EQ")

    def __ne__(self, o: Any) -> "Value":  # type: ignore[override]
        return self._compare(o, "NE")

    def __bool__(self) -> bool:
        raise TypeError("a builder Value has no truth value; use select/conditional on a pred Value")


class _Shared:
    """What all builders of one module share: MLIR context and module, names, signatures."""

    def __init__(self, name: str) -> None:
        self.context = new_context()
        with self.context, ir.Location.unknown():
            self.module = ir.Module.create()
            self.module.operation.attributes[MODULE_NAME] = ir.StringAttr.get(name)
        self.names: set[str] = set()
        self.counter = 0
        self.signatures: dict[str, Signature] = {}
        self.builders: list[Builder] = []
        self.reducers: dict[tuple[str, str], Computation] = {}
        self.channels = 0  # the last channel handle made
        self.async_computations: set[str] = set()  # computations an async-start calls

    def fresh(self, base: str) -> str:
        """XLA-style unique names: `add.3` (a global counter, as XlaBuilder numbers instructions)."""
        while True:
            self.counter += 1
            name = f"{base}.{self.counter}"
            if name not in self.names:
                self.names.add(name)
                return name

    def claim(self, name: str) -> str:
        """`name` itself when free, else a fresh `name.N`."""
        if name not in self.names:
            self.names.add(name)
            return name
        return self.fresh(name)


class Builder:
    """Builds one HLO computation op by op; `build(root)` finishes it.

    The top-level builder's `build` returns the `hlo_mlir.Module` (its computation is the ENTRY);
    a sub-builder's (`sub_builder`) returns a `Computation` for reduce, sort, while, call ...
    """

    def __init__(self, name: str = "module", *, _shared: _Shared | None = None,
                 _parent: "Builder | None" = None) -> None:
        self.shared = _shared or _Shared(name)
        self.parent = _parent
        self.name = self.shared.claim(name) if _parent is not None else name
        self.params: list[tuple[Value, str, SourceLocation]] = []
        self.param_numbers: list[int] = []  # of self.params, in creation order until build
        self.closed: str | None = None  # why no more ops can be added
        self.dropped = False  # erased from the module, unbuilt, when the module was built
        self.frontend: dict[str, str] = {}  # frontend_attributes of every op emitted (see frontend_attributes)
        loc = call_site()
        with self.context, self._loc(loc), ir.InsertionPoint(self.shared.module.body):
            self.func = func.FuncOp(self.name, ir.FunctionType.get([], []),
                                    visibility="private" if _parent is not None else None)
            self.block = self.func.add_entry_block()
        self.shared.builders.append(self)

    # -- plumbing ------------------------------------------------------------------------------
    @property
    def context(self) -> ir.Context:
        return self.shared.context

    def _loc(self, loc: SourceLocation) -> ir.Location:
        return ir.Location.file(loc.file, loc.line, loc.col, context=self.context)

    def sub_builder(self, name: str) -> "Builder":
        """A builder for a called computation (reducer, comparator, body ...) of the same module."""
        return Builder(name, _shared=self.shared, _parent=self)

    def _check_open(self, opcode: str) -> None:
        if self.closed:
            raise user_error(opcode, f"computation '{self.name}' {self.closed}")

    def _own(self, opcode: str, values: Sequence[Value]) -> None:
        for v in values:
            if not isinstance(v, Value):
                raise user_error(opcode, f"expected a builder Value, got {type(v).__name__}")
            if v.builder is not self:
                raise user_error(opcode, f"operand {v!r} belongs to computation '{v.builder.name}', "
                                         f"not to '{self.name}'")

    def infer(self, opcode: str, types: Sequence[HloType], attrs: Mapping[str, Any] | None = None,
              declared: HloType | None = None) -> HloType:
        """The result type by the shape rules; a broken rule is an HloError at the user's call."""
        try:
            given = {k: v for k, v in (attrs or {}).items() if v is not None}
            return infer_result_type(opcode, list(types), given, self.shared.signatures, declared)
        except ShapeError as e:
            raise user_error(opcode, str(e)) from None

    def emit(self, opcode: str, operands: Sequence[Value], attrs: Mapping[str, Any] | None = None, *,
             declared: HloType | None = None, mlir_attrs: Mapping[str, ir.Attribute] | None = None) -> Value:
        """Append one op; its result type comes from the shape rules (`declared` for DECLARED_ONLY ops).

        The builder's current frontend attributes are added unless `attrs` has its own."""
        self._check_open(opcode)
        self._own(opcode, operands)
        attrs = {k: v for k, v in (attrs or {}).items() if v is not None}
        if self.frontend and "frontend_attributes" not in attrs:
            attrs["frontend_attributes"] = frontend_attributes_text(self.frontend)
        result = self.infer(opcode, [v.type for v in operands], attrs, declared)
        loc = call_site()
        with self.context, ir.InsertionPoint(self.block):
            extra = dict(mlir_attrs or {})
            if has_bounds(result):
                extra[SHAPE] = layout.to_attr(layout.from_text(str(result)))
            try:
                op = edit.create(opcode, [v.ir for v in operands], result, attrs, name=self.shared.fresh(opcode),
                                 loc=self._loc(loc), mlir_attrs=extra)
            except ValueError as e:
                raise user_error(opcode, str(e)) from None
        return Value(self, op.result)

    @contextmanager
    def frontend_attributes(self, attributes: Mapping[str, str]) -> Iterator[None]:
        """Ops emitted inside `with b.frontend_attributes({...}):` carry these frontend_attributes
        (merged over the enclosing ones), like XlaBuilder's SetFrontendAttributes / FrontendAttributesSaver.
        E.g. `_xla_send_recv_source_target_pairs` routes send/recv between replicas."""
        saved = self.frontend
        self.frontend = {**saved, **{str(k): str(v) for k, v in attributes.items()}}
        try:
            yield
        finally:
            self.frontend = saved

    def _channel(self, kind: str) -> ChannelHandle:
        self.shared.channels += 1
        return ChannelHandle(self.shared.channels, kind)

    def create_channel_handle(self) -> ChannelHandle:
        """A new DEVICE_TO_DEVICE channel (send/recv), unique in the module."""
        return self._channel("DEVICE_TO_DEVICE")

    def create_device_to_host_channel_handle(self) -> ChannelHandle:
        """A new DEVICE_TO_HOST channel (send_to_host), unique in the module."""
        return self._channel("DEVICE_TO_HOST")

    def create_host_to_device_channel_handle(self) -> ChannelHandle:
        """A new HOST_TO_DEVICE channel (recv_from_host), unique in the module."""
        return self._channel("HOST_TO_DEVICE")

    # -- leaves ------------------------------------------------------------------------------
    def parameter(self, number: int, shape: HloType | str, name: str | None = None) -> Value:
        """Parameter `number` of `shape`; parameters may be created in any order, and `build` checks that
        the numbers are 0, 1, 2, ... without gaps."""
        self._check_open("parameter")
        if not isinstance(number, int) or number < 0:
            raise user_error("parameter", f"a parameter number is an integer >= 0, got {number!r}")
        if number in self.param_numbers:
            raise user_error("parameter", f"parameter {number} is already defined")
        t = to_type(shape, "parameter")
        loc = call_site()
        with self.context:
            arg = self.block.add_argument(to_mlir_type(t), self._loc(loc))
        pname = self.shared.claim(name) if name else self.shared.fresh("parameter")
        value = Value(self, arg)
        self.params.append((value, pname, loc))
        self.param_numbers.append(number)
        return value

    def _order_parameters(self) -> None:
        """Make the block arguments follow the parameter numbers (they were added in creation order)."""
        missing = sorted(set(range(len(self.params))) - set(self.param_numbers))
        if missing:
            raise user_error("build", f"parameter numbers must be 0, 1, 2, ... without gaps: parameter {missing[0]} "
                                      f"of computation '{self.name}' is missing")
        if self.param_numbers == sorted(self.param_numbers):
            return
        order = sorted(range(len(self.params)), key=self.param_numbers.__getitem__)
        n = len(order)
        for i in order:
            old = self.block.arguments[i]
            new = self.block.add_argument(old.type, old.location)
            old.replace_all_uses_with(new)
            self.params[i][0].ir = new
        for _ in range(n):
            self.block.erase_argument(0)
        self.params = [self.params[i] for i in order]
        self.param_numbers = sorted(self.param_numbers)

    def constant(self, value: Any, dtype: Any = None) -> Value:
        """A constant from a NumPy array or a Python/NumPy scalar (floats default to f32, ints to s32)."""
        arr = np.asarray(value)
        if dtype is None and not isinstance(value, (np.ndarray, np.generic)):
            dtype = {"f": np.float32, "i": np.int32, "u": np.uint32, "c": np.complex64}.get(arr.dtype.kind, arr.dtype)
        if dtype is not None:
            arr = arr.astype(element_type(dtype).dtype)
        try:
            t = ArrayType(element_type(arr.dtype), tuple(arr.shape))
        except KeyError:
            raise user_error("constant", f"NumPy dtype {arr.dtype} has no HLO element type") from None
        with self.context:
            attr = array_to_attr(arr, t)
        return self.emit("constant", [], declared=t, mlir_attrs={"value": attr})

    def lift(self, x: Any, element: ElementType) -> Value:
        """`x` itself if it is a Value, else a constant of `element` (an error if that changes its value,
        e.g. 1.5 for an integer array: XLA has no implicit type promotion)."""
        if isinstance(x, Value):
            return x
        arr = np.asarray(x)
        if arr.dtype.kind not in "biufc":
            raise user_error("constant", f"expected a builder Value or a number, got {type(x).__name__}")
        converted = arr.astype(element.dtype)
        if not element.is_float and not element.is_complex and not np.array_equal(converted, arr):
            raise user_error("constant", f"{x!r} is not a value of element type {element.hlo}")
        return self.constant(converted)

    # -- finishing -----------------------------------------------------------------------------
    def build(self, root: Value | Sequence[Value]) -> "Module | Computation":
        """Finish the computation with ROOT `root` (a sequence becomes a tuple).

        Returns the Module for the top-level builder, a Computation for a sub-builder."""
        if not isinstance(root, Value):
            from hlo_mlir.builder.shape_ops import tuple_

            root = tuple_(list(root), builder=self)
        self._check_open("build")
        self._own("build", [root])
        loc = call_site()
        with self.context:
            self._order_parameters()
        with self.context, ir.InsertionPoint(self.block):
            func.ReturnOp([root.ir], loc=self._loc(loc))
            params = [p.type for p, _, _ in self.params]
            self.func.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get([p.ir.type for p, _, _ in self.params], [root.ir.type]))
            if self.params:
                self.func.arg_attrs = ir.ArrayAttr.get(
                    [ir.DictAttr.get({NAME: ir.StringAttr.get(n)}) for _, n, _ in self.params])
        self.closed = "is already built"
        sig = Signature(tuple(params), root.type)
        if self.parent is not None:
            self.shared.signatures[self.name] = sig
            return Computation(self.name, sig)
        with self.context:
            for unfinished in (sb for sb in self.shared.builders if not sb.closed):
                unfinished.func.operation.erase()  # never built, so nothing can call it
                unfinished.dropped = True
                unfinished.closed = "was dropped: it was not built before the module"
            body = self.shared.module.body
            last = body.operations[len(body.operations) - 1]
            if last.operation != self.func.operation:
                self.func.operation.move_after(last)
        return Module(self.shared.module, self.context, filename=f"<builder {self.name}>")

    def binary_computation(self, opcode: str, element: Any, name: str | None = None) -> Computation:
        """`(x: e[], y: e[]) -> opcode(x, y)`: the usual reducer (add, maximum, ...), made once per module."""
        e = element_type(element)
        key = (opcode, e.hlo)
        if name is None and key in self.shared.reducers:
            return self.shared.reducers[key]
        sub = self.sub_builder(name or f"{opcode}_{e.hlo}")
        x = sub.parameter(0, ArrayType(e, ()), "x")
        y = sub.parameter(1, ArrayType(e, ()), "y")
        comp: Computation = sub.build(sub.emit(opcode, [x, y]))  # type: ignore[assignment]
        if name is None:
            self.shared.reducers[key] = comp
        return comp

    def comparator(self, elements: Sequence[Any], direction: str = "LT", name: str | None = None) -> Computation:
        """A sort comparator ordering by the first operand (`direction` LT: ascending)."""
        es = [element_type(e) for e in elements]
        sub = self.sub_builder(name or f"compare_{direction.lower()}")
        params = []
        for i, e in enumerate(es):
            params += [sub.parameter(2 * i, ArrayType(e, ()), f"lhs.{i}"),
                       sub.parameter(2 * i + 1, ArrayType(e, ()), f"rhs.{i}")]
        from hlo_mlir.builder.elementwise import compare

        return sub.build(compare(params[0], params[1], direction))  # type: ignore[return-value]


def builder_of(opcode: str, values: Sequence[Any]) -> Builder:
    """The builder the operands belong to (the first Value's)."""
    for v in values:
        if isinstance(v, Value):
            return v.builder
    raise user_error(opcode, "needs at least one builder Value operand")
