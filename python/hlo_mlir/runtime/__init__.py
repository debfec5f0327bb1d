"""The JIT: compile lowered modules with MLIR's ExecutionEngine and call them on NumPy arrays."""
