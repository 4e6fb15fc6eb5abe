"""Benchmarks (`make bench`): medians and side-by-side ratios, never timed assertions."""
