"""Command-line tools beside the kernel: `blitz run` (cli/run.py) and its report."""
