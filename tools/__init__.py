"""Command-line tools: argument parsing only; the work is done by library calls."""
