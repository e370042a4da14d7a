"""Runs: orchestration (which rows, which mode, repeats, reports) on top of the backend protocol."""
