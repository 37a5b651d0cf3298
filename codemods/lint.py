"""``python -m codemods.lint PATH...``: report deprecated FSDP names and arguments."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from codemods.cli import EXIT_ERROR, base_parser


def build_parser():
    """The ``fsdp-lint`` argument parser."""
    parser = base_parser(
        "fsdp-lint",
        "Report deprecated FSDP, Lightning and FairScale names and arguments, with stable "
        "rule codes.",
        epilog="Example:\n  python -m codemods.lint src/",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or directories")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    build_parser().parse_args(argv)
    print("fsdp-lint: the checking engine is not part of this release yet", file=sys.stderr)
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
