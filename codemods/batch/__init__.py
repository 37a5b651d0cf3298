"""Runs over many files: finding them, the worker pool, stopping, atomic writes."""
