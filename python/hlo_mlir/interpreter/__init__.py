"""The NumPy reference interpreter. Importing it registers every `ops_*` kernel module."""

import importlib
import pkgutil

for _mod in pkgutil.iter_modules(__path__):
    if _mod.name.startswith("ops_"):
        importlib.import_module(f"{__name__}.{_mod.name}")

from hlo_mlir.interpreter.ops_control import register_custom_call  # noqa: E402

__all__ = ["register_custom_call"]
