"""The cheap tests that decide which files are worth parsing: text, names, ``noqa``."""
