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

import sys

from codemods.cli.plain_file import settled
from codemods.cli.quick_args import LINT, read
from codemods.startup import long_lived

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import NoReturn

    from codemods.batch import stopping
    from codemods.batch.runner import FileResult
    from codemods.cli import output
    from codemods.cli.options import Choices

#: The lint's modules, loaded by a run :func:`settled` does not answer (a commit hook's
#: run on a file that names nothing legacy needs none of them, nor this module's).
_MODULES = (
    "codemods.batch.runner",
    "codemods.cli.explaining",
    "codemods.cli.noqa_comments",
    "codemods.cli.options",
    "codemods.cli.output",
    "codemods.cli.progress",
    "codemods.cli.run_lines",
)
_loaded = False


def _load() -> None:
    """Load :data:`_MODULES`, once: they live as long as the run (codemods/startup.py)."""
    global _loaded
    if not _loaded:
        import importlib  # here: a file that names nothing legacy is answered without it

        with long_lived():  # the collector leaves them alone
            for name in _MODULES:
                importlib.import_module(name)
        _loaded = True


def __getattr__(name: str) -> int:
    """The exit codes (``EXIT_FINDINGS``...), as :mod:`codemods.cli.options` defines them."""
    if name.startswith("EXIT_"):
        from codemods.cli import options

        return getattr(options, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_parser() -> argparse.ArgumentParser:
    """The ``fsdp-lint`` argument parser."""
    from codemods.cli import output
    from codemods.cli.options import add_rule_options, add_run_options, base_parser

    parser = base_parser(
        "fsdp-lint",
        "Report deprecated FSDP, Lightning and FairScale names and arguments, with stable "
        "rule codes.",
        epilog="Examples:\n  python -m codemods.lint src/\n"
        "  python -m codemods.lint --output-format github --target-torch 2.2 .\n"
        "  python -m codemods.lint --explain FSDP103\n"
        "  python -m codemods.lint --explain    (every rule)",
    )
    parser.add_argument("--fix", action="store_true", help="apply the safe fixes")
    parser.add_argument(
        "--diff",
        action="store_true",
        help="print the diff --fix would write, write nothing; exit 1 if there is one",
    )
    parser.add_argument(
        "--show-fixes",
        action="store_true",
        help="with --fix, list the fixes applied, by file and rule (with --diff, those it "
        "would apply)",
    )
    parser.add_argument(
        "--add-noqa",
        action="store_true",
        help="add a `# noqa: CODE` comment on each line with a finding, and exit",
    )
    add_rule_options(parser)
    parser.add_argument(
        "--output-format", choices=output.FORMATS, default="text", help="default: text"
    )
    parser.add_argument(
        "--statistics", action="store_true", help="print a count per rule instead of each finding"
    )
    parser.add_argument(
        "--explain",
        metavar="CODE",
        nargs="?",
        const="",
        help="explain a rule and exit; without CODE, list every rule "
        "(--output-format json for either in JSON)",
    )
    add_run_options(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    status = settled(arguments)  # files that name nothing legacy: answered at once
    if status is not None:
        return status
    _load()
    from codemods.cli import explaining

    # A hook's command line (flags and paths) is read without building the parser.
    args = read(arguments, LINT)
    if args is None:
        args = build_parser().parse_args(arguments)
    with explaining.quiet_broken_pipe():
        return _main(args)


def _error(message: str) -> NoReturn:
    """Stop as argparse's ``parser.error`` does: the usage and ``message``, exit status 2."""
    build_parser().error(message)


def _main(args: argparse.Namespace) -> int:
    from codemods.batch import stopping
    from codemods.batch.runner import process_files
    from codemods.cli import explaining, noqa_comments
    from codemods.cli.config import ConfigError
    from codemods.cli.later_classes import LaterClasses
    from codemods.cli.options import choices, paths_of
    from codemods.cli.progress import progress_printer

    if args.explain is not None:
        return explaining.explain(args.explain, args.output_format)
    args.paths = paths_of(args)
    stdin = args.paths == ["-"]
    if "-" in args.paths and not stdin:
        _error("- (stdin) cannot be combined with other paths")
    if args.diff and args.fix:
        _error("--diff writes nothing: it cannot be combined with --fix")
    try:
        chosen = choices(
            args,
            [args.stdin_filename] if stdin and args.stdin_filename else args.paths,
            args.fix or args.diff,
        )
    except ConfigError as exc:
        _error(str(exc))
    if args.verbose:
        print(f"configuration: {chosen.config.path or 'none (the defaults)'}", file=sys.stderr)
    if stdin:
        if args.add_noqa:
            _error("--add-noqa writes files: it does not read stdin")
        return _finish(args, chosen, [_stdin(args, chosen)], [], stopping.Stop())
    # SIGINT and SIGTERM stop the run between files, and the summary says what it did.
    with stopping.on_signals() as stop:
        # A run that writes nothing reads the project classes after it screens the files
        # (see cli/later_classes.py); a fixing run needs them before the first write.
        chosen, files, problems = chosen.files(args, classes=args.fix)
        later = None if args.fix else LaterClasses(chosen, files)
        results = process_files(
            files,
            chosen.settings,
            write=args.fix,
            jobs=args.jobs,
            settings_for=chosen.settings_for,
            progress=None if args.quiet or args.silent else progress_printer(len(files)),
            hooks=() if later is None else later.hooks,
        )
        if later is not None and not stopping.STATE.requested:
            chosen, results = later.finish(
                chosen,
                results,
                lambda paths, settings_for: process_files(
                    paths, chosen.settings, False, args.jobs, settings_for=settings_for
                ),
            )
        if noqa_comments.wanted(chosen.settings):
            noqa_comments.add_unused(results, chosen.settings_for)
        if args.add_noqa:
            return noqa_comments.add_noqa(results, [str(p) for p in problems])
        return _finish(args, chosen, results, [str(p) for p in problems], stop)


def _finish(
    args: argparse.Namespace,
    chosen: Choices,
    results: list[FileResult],
    problems: list[str],
    stop: stopping.Stop,
) -> int:
    """Print the findings, the summary and the errors; the exit code."""
    from codemods.cli import output
    from codemods.cli.options import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, EXIT_SIGNAL_BASE
    from codemods.cli.run_lines import skipped_lines, stopped_lines

    # A file that does not parse is a finding (ruff's invalid-syntax), not an error.
    errors = problems + [f"{r.path}: {r.error}" for r in results if r.error and not r.syntax]
    # A fix counts once it is written; a file whose write failed (or was skipped, or
    # not reached) still holds its findings, and they are reported as remaining.
    items = [
        output.Located(r.path, f)
        for r in results
        for f in r.findings
        if not (f.fixed and r.written)
    ]
    items += [output.Located(r.path, r.syntax) for r in results if r.syntax]
    items.sort(key=lambda i: (i.path, i.finding.cell or 0, i.finding.line, i.finding.col))
    if args.output_format == "json" and not args.statistics:
        from codemods.cli import fix_edits, json_format  # JSON only: difflib and json

        items = fix_edits.with_edits(json_format.with_ends(items), chosen.settings_for)
    fixed = sum(f.fixed for r in results if r.written for f in r.findings)
    unchecked = len(problems) + sum(r.outcome == "error" and not r.syntax for r in results)
    unreached = sum(not r.reached for r in results)
    if args.diff:
        _write_diff(results)
    if not args.silent:
        notes = [note for r in results for note in r.notes]
        unsafe = []
        if args.fix:  # --diff lists every finding, those its patch fixes too
            from codemods.cli import fix_lines  # fixing runs only: not a hook's

            unsafe = fix_lines.unsafe_fix_lines(results, applied=True)
        missed = (unchecked, unreached)
        _print(args, chosen, items, fixed, errors, len(results), missed, notes, unsafe)
        if args.show_fixes and (args.fix or args.diff):
            from codemods.cli.fix_lines import fix_list

            # Beside the findings: stderr where stdout carries code or a patch.
            out = sys.stderr if args.diff or args.paths == ["-"] else sys.stdout
            out.write(fix_list(results, written=args.fix))
    else:
        for error in errors:
            print(f"error: {error}", file=sys.stderr)
    for line in skipped_lines(results):
        print(line, file=sys.stderr)
    if stop.signum or unreached:
        print("\n".join(stopped_lines(stop.signal_name, results, args.fix)), file=sys.stderr)
    if stop.signum:
        return EXIT_SIGNAL_BASE + stop.signum
    if errors:
        return EXIT_ERROR
    if args.exit_zero:
        return EXIT_CLEAN
    if args.diff:
        return EXIT_FINDINGS if any(r.new_source is not None for r in results) else EXIT_CLEAN
    return EXIT_FINDINGS if items else EXIT_CLEAN


def _write_diff(results: list[FileResult]) -> None:
    """``--diff``: the patch ``--fix`` would write, on stdout; the count on stderr."""
    from codemods.cli.diffs import unified_diff, write_stdout  # --diff only: not a hook's

    patch = b"".join(unified_diff(r) for r in results if r.new_source is not None)
    write_stdout(patch)
    fixes = sum(f.fixed for r in results if r.new_source is not None for f in r.findings)
    print(f"Would fix {fixes} finding{'s' if fixes != 1 else ''}.", file=sys.stderr)


def _stdin(args: argparse.Namespace, chosen: Choices) -> FileResult:
    """Lint (and with ``--fix``, fix) standard input; fixed code goes to standard output."""
    from codemods.batch.runner import process_source

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
    notes: Sequence[str] = (),
    unsafe: Sequence[str] = (),
) -> None:
    """The findings in ``args``'s format, with the text format's summary and notes.

    ``unsafe``: a line for each unsafe fix ``--fix`` applied, printed after the findings
    it left in the text format (the other formats list only what is left, as ruff's do).
    """
    from codemods.cli import output

    # With --fix on stdin (or --diff), stdout carries the code: the findings go to stderr.
    out = sys.stderr if (args.fix and args.paths == ["-"]) or args.diff else sys.stdout
    settings = chosen.settings
    if args.output_format == "json":
        if args.statistics:
            import json

            out.write(json.dumps(output.statistics_rows(items, settings), indent=2) + "\n")
        else:
            from codemods.cli import json_format

            out.write(json_format.as_json(items))
    elif args.output_format == "github":
        out.write(output.github(items))
    elif args.output_format == "sarif":
        out.write(output.sarif(items, errors))
    elif args.statistics:
        out.write(output.statistics(items, settings))
    else:
        out.write(output.text(items, settings, chosen.settings_for))
        out.write("".join(line + "\n" for line in unsafe))
        if not args.quiet:
            if not files and not errors:
                out.write("No Python files found.\n")
            out.write(output.summary(items, fixed, settings, *missed))
            if any((i.finding.no_fix or "").startswith("no fix runs on") for i in items):
                # why those findings have no fix: the ranges they were judged against
                lines = chosen.summary_lines(no_fix=True)
                out.write("".join(line + "\n" for line in lines))
            # a declared range set aside for a file: its "All checks passed!" is at its evidence
            out.write("".join(note + "\n" for note in notes))
    out.flush()
    for error in errors:
        print(f"error: {error}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
