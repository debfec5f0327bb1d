"""The machine's memory as /proc/meminfo states it: the one reader for checks that refuse an allocation
that cannot succeed (JIT results, random inputs) instead of swapping for minutes or crashing."""

from __future__ import annotations


def meminfo_bytes(*fields: str) -> int | None:
    """The sum of the named /proc/meminfo fields (e.g. "MemTotal", "SwapTotal") in bytes; None where the
    file or a field is missing."""
    found: dict[str, int] = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name in fields:
                    found[name] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return sum(found.values()) if len(found) == len(fields) else None
