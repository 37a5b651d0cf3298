"""``python -m codemods.lint PATH...``: report deprecated FSDP names and arguments.

Each finding prints as ``path:line:col: CODE [*] message`` (``[*]``: ``--fix`` fixes
it), sorted by path and position, then a summary. ``--fix`` applies the safe fixes
through the same engine as ``codemods.migrate`` (``--unsafe-fixes`` the unsafe ones
too). ``# noqa``, ``# noqa: CODE`` and a file-level ``# fsdp-compat: noqa`` silence
findings; ``[tool.fsdp-compat]`` in the nearest ``pyproject.toml`` configures it.

Exit codes: 0 nothing found (or ``--exit-zero``); 1 findings remain; 2 errors (a file
that cannot be read or parsed, bad arguments or configuration); 130 or 143 stopped by
SIGINT or SIGTERM (with ``--fix``, what was written before the stop is listed).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from codemods.batch import stopping
from codemods.batch.files import discover
from codemods.batch.runner import FileResult, process_files, process_source
from codemods.cli import output
from codemods.cli.config import ConfigError
from codemods.cli.options import (
    EXIT_CLEAN,
    EXIT_ERROR,
    EXIT_FINDINGS,
    EXIT_SIGNAL_BASE,
    Choices,
    add_rule_options,
    base_parser,
    choices,
    skipped_lines,
    stopped_lines,
)
from codemods.registry import REGISTRY


def build_parser() -> argparse.ArgumentParser:
    """The ``fsdp-lint`` argument parser."""
    parser = base_parser(
        "fsdp-lint",
        "Report deprecated FSDP, Lightning and FairScale names and arguments, with stable "
        "rule codes.",
        epilog="Examples:\n  python -m codemods.lint src/\n"
        "  python -m codemods.lint --output-format github --target-torch 2.2 .\n"
        "  python -m codemods.lint --explain FSDP103",
    )
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="files or directories; - for stdin"
    )
    parser.add_argument("--fix", action="store_true", help="apply the safe fixes")
    add_rule_options(parser)
    parser.add_argument(
        "--output-format", choices=output.FORMATS, default="text", help="default: text"
    )
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    parser.add_argument(
        "--statistics", action="store_true", help="print a count per rule instead of each finding"
    )
    parser.add_argument("--explain", metavar="CODE", help="explain a rule and exit")
    parser.add_argument(
        "--stdin-filename", metavar="PATH", help="the name of the file read from stdin"
    )
    parser.add_argument(
        "--jobs", type=int, default=None, metavar="N", help="worker processes (default: all cores)"
    )
    parser.add_argument("--quiet", action="store_true", help="no summary line")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.explain:
        return _explain(args.explain)
    stdin = args.paths == ["-"]
    if "-" in args.paths and not stdin:
        parser.error("- (stdin) cannot be combined with other paths")
    try:
        chosen = choices(
            args, [args.stdin_filename] if stdin and args.stdin_filename else args.paths, args.fix
        )
    except ConfigError as exc:
        parser.error(str(exc))
    if stdin:
        return _finish(args, chosen, [_stdin(args, chosen)], [], stopping.Stop())
    # SIGINT and SIGTERM stop the run between files, and the summary says what it did.
    with stopping.on_signals() as stop:
        files, problems = discover(args.paths, skip=chosen.skip())
        chosen = chosen.with_files(files)  # classes one file's hooks derive from in another
        results = process_files(
            files,
            chosen.settings,
            write=args.fix,
            jobs=args.jobs,
            settings_for=chosen.settings_for,
        )
        return _finish(args, chosen, results, [str(p) for p in problems], stop)


def _finish(
    args: argparse.Namespace,
    chosen: Choices,
    results: list[FileResult],
    problems: list[str],
    stop: stopping.Stop,
) -> int:
    """Print the findings, the summary and the errors; the exit code."""
    errors = problems + [f"{r.path}: {r.error}" for r in results if r.error]
    # A fix counts once it is written; a file whose write failed (or was skipped, or
    # not reached) still holds its findings, and they are reported as remaining.
    items = [
        output.Located(r.path, f)
        for r in results
        for f in r.findings
        if not (f.fixed and r.written)
    ]
    fixed = sum(f.fixed for r in results if r.written for f in r.findings)
    unchecked = len(problems) + sum(r.outcome == "error" for r in results)
    unreached = sum(not r.reached for r in results)
    _print(args, chosen, items, fixed, errors, len(results), (unchecked, unreached))
    for line in skipped_lines(results):
        print(line, file=sys.stderr)
    if stop.signum or unreached:
        print("\n".join(stopped_lines(stop.signal_name, results, args.fix)), file=sys.stderr)
    if stop.signum:
        return EXIT_SIGNAL_BASE + stop.signum
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if items and not args.exit_zero else EXIT_CLEAN


def _stdin(args: argparse.Namespace, chosen: Choices) -> FileResult:
    """Lint (and with ``--fix``, fix) standard input; fixed code goes to standard output."""
    name = args.stdin_filename or "-"
    source = sys.stdin.buffer.read()
    result = process_source(name, source, chosen.settings_for(name))
    if args.fix:
        sys.stdout.buffer.write(result.new_source if result.new_source is not None else source)
        sys.stdout.flush()
        result.written = result.new_source is not None  # to standard output
    return result


def _print(
    args: argparse.Namespace,
    chosen: Choices,
    items: list[output.Located],
    fixed: int,
    errors: list[str],
    files: int,
    missed: tuple[int, int] = (0, 0),
) -> None:
    # With --fix on stdin, stdout carries the code: the findings go to stderr.
    out = sys.stderr if args.fix and args.paths == ["-"] else sys.stdout
    settings = chosen.settings
    if args.output_format == "json":
        out.write(output.as_json(items))
    elif args.output_format == "github":
        out.write(output.github(items))
    elif args.output_format == "sarif":
        out.write(output.sarif(items, errors))
    elif args.statistics:
        out.write(output.statistics(items, settings))
    else:
        out.write(output.text(items, settings, chosen.settings_for))
        if not args.quiet:
            if not files and not errors:
                out.write("No Python files found.\n")
            out.write(output.summary(items, fixed, settings, *missed))
            if any(item.finding.no_fix for item in items):
                # why those findings have no fix: the ranges they were judged against
                lines = chosen.summary_lines(no_fix=True)
                out.write("".join(line + "\n" for line in lines))
    out.flush()
    for error in errors:
        print(f"error: {error}", file=sys.stderr)


def _explain(code: str) -> int:
    try:
        rule = REGISTRY[code.strip().upper()]
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return EXIT_ERROR
    from codemods.registry.render import explain
    from codemods.rules.index import where_it_lives

    print(explain(rule))
    print("\n## Where it lives")
    print("\n".join(f"- `{path}`" for path in where_it_lives(rule)))
    return EXIT_CLEAN


if __name__ == "__main__":
    sys.exit(main())
