"""call-inliner (XLA's CallInliner): replace `call` instructions by the body of their callee, as XLA's
pass decides which, then remove what became dead (XLA runs HloDCE after inlining).

Computations are visited callees first, each inlining its own inlineable calls once (a callee's calls
are already inlined when it is copied into its callers). A call is inlineable, as in XLA, unless it has
a non-empty backend_config, sits in a computation an async-start runs, has the frontend attribute
`inlineable` set to anything but "true", or is a composite call whose `composite.name` is in
`composites-to-preserve`. Options (XLA's constructor arguments):
- `single-call-site=true`: only callees with exactly one call site in the module (any instruction
  calling them, counted before inlining) are inlined;
- `composites-to-preserve=a,b`: composite calls of these names stay calls;
- `uniquify-channel-ids=true`: in each computation something was inlined into, the instructions
  carrying a channel_id are numbered 1, 2, ... in program order (XLA numbers every channel
  instruction, those without a channel_id too, which changes what a collective groups; those are left
  without one here);
- `update-domain=true` (sharding-domain isolation) is not supported: an error.
XLA's Shardy rule (calls of `shmap_body` kept when the module uses the Shardy partitioner) and the GPU
stream-annotation rule need module configuration HLO text does not carry; they are not applied.
The call's own attributes are not carried to the inlined instructions (XLA carries a MUST_FUSE or
MAXIMAL_FUSE frontend attribute of the call to the fusible ones; that is not done here).

The `inline` pass stays the unconditional form (every call, no dce) the default pipeline uses.
"""

from __future__ import annotations

from collections.abc import Mapping

from mlir import ir

from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects import edit, opcode_of
from hlo_mlir.dialects.attributes import unquote
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.passes import dce
from hlo_mlir.passes.inline import inline_call


def _flag(options: Mapping[str, str], key: str) -> bool:
    value = options.get(key, "false")
    if value not in ("true", "false"):
        raise HloError(f"pass 'call-inliner': option '{key}' must be true or false, got '{value}'")
    return value == "true"


def _callees_first(fns: dict[str, ir.Operation]) -> list[str]:
    """Computation names in post order of the call graph (every callee before its callers)."""
    order: list[str] = []
    seen: set[str] = set()
    for root, fn in fns.items():
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter([c for op in edit.instructions(fn) for c in edit.callees(op)]))]
        while stack:  # depth-first without recursion: call chains may be deeper than Python's stack
            name, pending = stack[-1]
            callee = next((c for c in pending if c in fns and c not in seen), None)
            if callee is None:
                order.append(name)
                stack.pop()
                continue
            seen.add(callee)
            stack.append((callee, iter([c for op in edit.instructions(fns[callee]) for c in edit.callees(op)])))
    return order


def _inlineable(call: ir.Operation, preserve: set[str]) -> bool:
    """XLA's IsInlineableCallOp, for what HLO text carries."""
    ins = Instruction(call)
    if "backend_config" in ins.attrs:
        raw = ins.attrs["backend_config"]
        if (unquote(raw) if raw.startswith('"') else raw) != "":
            return False
    front = ins.frontend_attributes
    if front.get("inlineable", "true") != "true":
        return False
    composite = ins.attrs.get("is_composite", False)
    return not (composite and front.get("composite.name") in preserve)


def _uniquify_channel_ids(fn: ir.Operation) -> None:
    n = 1
    for op in edit.instructions(fn):
        if "channel_id" in op.attributes:
            op.attributes["channel_id"] = ir.IntegerAttr.get(op.attributes["channel_id"].type, n)
            n += 1


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    single_call_site = _flag(options, "single-call-site")
    uniquify = _flag(options, "uniquify-channel-ids")
    if _flag(options, "update-domain"):
        raise HloError("pass 'call-inliner': option 'update-domain' (sharding domain isolation after inlining)"
                       " is not supported")
    preserve = {n for n in options.get("composites-to-preserve", "").split(",") if n}
    fns = edit.functions(module)
    call_sites: dict[str, int] = {}
    async_bodies: set[str] = set()
    for fn in fns.values():
        for op in edit.instructions(fn):
            for callee in edit.callees(op):
                call_sites[callee] = call_sites.get(callee, 0) + 1
            if opcode_of(op) == "async-start":
                async_bodies.update(edit.callees(op))
    names = edit.Names(module)
    changed = False
    for name in _callees_first(fns):
        if name in async_bodies:
            continue
        inlined = False
        for call in list(edit.instructions(fns[name])):
            if opcode_of(call) != "call" or not _inlineable(call, preserve):
                continue
            callee = edit.callees(call)[0]
            if single_call_site and call_sites.get(callee, 0) != 1:
                continue
            inline_call(call, fns[callee], names)
            inlined = True
        if inlined and uniquify:
            _uniquify_channel_ids(fns[name])
        changed |= inlined
    if changed:
        dce.run(module, {})
    return changed
