"""Python "dialect modules" for the `hlo` and `hlo_v` op namespaces (empty: ops stay generic OpViews).

MLIR's Python bindings look up a module `<search prefix>.<namespace>` for OpView classes each time
they wrap an operation, and remember only successful lookups.  With no module for `hlo`, every op
visited by a Python walk costs failed imports (they were half of the HLO export time).  Registering
this module's namespace as a search prefix makes the first lookup succeed and be cached.
"""

from __future__ import annotations

import sys
import types

from mlir._mlir_libs import _mlir

NAMESPACES = ("hlo", "hlo_v")

for _ns in NAMESPACES:
    sys.modules.setdefault(f"{__name__}.{_ns}", types.ModuleType(f"{__name__}.{_ns}", f"no OpView classes for {_ns}"))

if __name__ not in _mlir.globals.dialect_search_modules:
    _mlir.globals.append_dialect_search_prefix(__name__)
for _ns in NAMESPACES:
    _mlir.globals._check_dialect_module_loaded(_ns)
