"""Print an HLO module whose entry is a chain of N elementwise ops (argv[1]) on f32[256]."""

import sys

n = int(sys.argv[1])
lines = ["HloModule chain", "ENTRY e {", "  p = f32[256] parameter(0)"]
prev = "p"
for i in range(n):
    op = ("add", "multiply", "subtract", "maximum")[i % 4]
    lines.append(f"  v{i} = f32[256] {op}({prev}, p)")
    prev = f"v{i}"
lines += [f"  ROOT r = f32[256] negate({prev})", "}"]
print("\n".join(lines))
