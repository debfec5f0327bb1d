"""Vectorizable expansions of the math dialect's transcendental functions (see `linalg_fast_math`)."""
