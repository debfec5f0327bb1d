"""The host CPU's feature flags as the kernel reports them: the JIT compiles for the host, so the lowering
picks instructions by them and the compile cache keys its objects on them."""

from __future__ import annotations

import functools


@functools.cache
def flags_line() -> str:
    """The first `flags` line of /proc/cpuinfo; '' where there is none."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((line for line in f if line.startswith("flags")), "")
    except OSError:
        return ""


def has(flag: str) -> bool:
    return flag in flags_line().split()
