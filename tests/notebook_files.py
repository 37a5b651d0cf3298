"""Jupyter notebooks written as Jupyter writes them, for the tests that lint them."""

from __future__ import annotations

import json


def notebook(*cells: str, markdown_first: bool = False) -> str:
    """A notebook whose code cells hold ``cells`` (after a markdown cell, if asked)."""
    code = [
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": source.splitlines(keepends=True),
        }
        for source in cells
    ]
    markdown = [{"cell_type": "markdown", "metadata": {}, "source": ["# Training\n"]}]
    return json.dumps(
        {
            "cells": (markdown if markdown_first else []) + code,
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        },
        indent=1,
    )
