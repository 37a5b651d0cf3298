"""Pieces both command-line tools share: the argument parser's common part and exit codes."""

from __future__ import annotations

import argparse

from codemods._version import __version__

#: Nothing left to do.
EXIT_CLEAN = 0
#: Changes made or needed, or findings remain.
EXIT_FINDINGS = 1
#: Usage, I/O or parse errors.
EXIT_ERROR = 2


def base_parser(prog: str, description: str, epilog: str = "") -> argparse.ArgumentParser:
    """Build a parser with the options every fsdp-compat tool has (``--version``)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser
