"""``python -m codemods.migrate PATH...``: rewrite legacy FSDP code to the current API.

Rewrites files in place by default; ``--diff`` prints the change and writes nothing;
``--check`` writes nothing and exits 1 if anything would change. ``-`` reads standard
input and writes the result to standard output.

Exit codes: 0 nothing left to do; 1 changes made or needed, or findings that need a
human; 2 usage, I/O or parse errors; 130 or 143 stopped by SIGINT or SIGTERM (what was
written before the stop is listed, and the rest is unchanged).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from codemods.startup import long_lived

with long_lived():  # they live as long as the run: the collector leaves them alone
    from codemods.batch import stopping
    from codemods.batch.runner import FileResult, process_files, process_source
    from codemods.cli import fix_lines, output
    from codemods.cli.config import ConfigError
    from codemods.cli.diffs import unified_diff, write_stdout
    from codemods.cli.explaining import quiet_broken_pipe
    from codemods.cli.options import (
        EXIT_CLEAN,
        EXIT_ERROR,
        EXIT_FINDINGS,
        EXIT_SIGNAL_BASE,
        Choices,
        add_rule_options,
        add_run_options,
        base_parser,
        choices,
        paths_of,
    )
    from codemods.cli.progress import progress_printer
    from codemods.cli.quick_args import MIGRATE, read
    from codemods.cli.run_lines import skipped_lines, stopped_lines
    from codemods.settings import Settings

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    import argparse
    from typing import Any, NoReturn


def build_parser() -> argparse.ArgumentParser:
    """The ``fsdp-migrate`` argument parser."""
    parser = base_parser(
        "fsdp-migrate",
        "Rewrite legacy FSDP, Lightning and FairScale code to the current torch and "
        "Lightning API, keeping formatting and comments.",
        epilog="Example:\n  python -m codemods.migrate --diff src/",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--diff", action="store_true", help="print a unified diff, write nothing")
    mode.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if anything would change"
    )
    parser.add_argument(
        "--show-fixes",
        action="store_true",
        help="list the fixes applied, by file and rule (with --diff or --check, those it "
        "would apply)",
    )
    add_rule_options(parser)
    parser.add_argument("--report", type=Path, metavar="FILE", help="write a JSON report")
    add_run_options(parser)
    return parser


def _report(path: Path, results: list[FileResult], summary: dict) -> None:
    data = {
        "summary": summary,
        "files": [
            {
                "path": r.path,
                "changed": r.new_source is not None,
                "written": r.written,
                "outcome": r.outcome,
                "skipped": r.skipped,
                "error": r.error,
                "releases": r.releases,
                "notes": r.notes,
                "findings": [
                    {
                        "line": f.line,
                        "column": f.col,
                        "code": f.code,
                        "message": f.message,
                        "fixable": f.fixable,
                        "fixed": f.fixed,
                        "applicability": output.applicability_of(f),
                        "withheld": f.withheld,
                        "no_fix": f.no_fix,
                    }
                    for f in r.findings
                ],
            }
            for r in results
        ],
    }
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    # A hook's command line (flags and paths) is read without building the parser.
    args = read(sys.argv[1:] if argv is None else list(argv), MIGRATE)
    if args is None:
        args = build_parser().parse_args(argv)
    with quiet_broken_pipe():
        return _main(args)


def _error(message: str) -> NoReturn:
    """Stop as argparse's ``parser.error`` does: the usage and ``message``, exit status 2."""
    build_parser().error(message)


def _main(args: argparse.Namespace) -> int:
    args.paths = paths_of(args)
    stdin = args.paths == ["-"]
    if "-" in args.paths and not stdin:
        _error("- (stdin) cannot be combined with other paths")
    try:
        chosen = choices(
            args, [args.stdin_filename] if stdin and args.stdin_filename else args.paths, True
        )
    except ConfigError as exc:
        _error(str(exc))
    write = not (args.diff or args.check)
    if args.verbose:
        print(f"configuration: {chosen.config.path or 'none (the defaults)'}", file=sys.stderr)
    if stdin:
        name = args.stdin_filename or "-"
        return _stdin(chosen.settings_for(name), write, name, args.exit_zero, args.show_fixes)
    # SIGINT and SIGTERM stop the run between files, and the summary says what it did.
    with stopping.on_signals() as stop:
        chosen, files, problems = chosen.files(args)
        progress = None if args.quiet or args.silent else progress_printer(len(files))
        links = chosen.fsdp1_checks.links() if chosen.fsdp1_checks else []
        if links:  # FSDP401's conversions across files: all written, or none
            from codemods.cli.project_writes import groups, run_together

            def process(paths: list[Path], write: bool, settings_for: Any) -> list[FileResult]:
                return process_files(
                    paths, chosen.settings, write=write, jobs=args.jobs, settings_for=settings_for
                )

            results = run_together(files, groups(links), process, chosen.settings_for, write)
        else:
            results = process_files(
                files,
                chosen.settings,
                write=write,
                jobs=args.jobs,
                progress=progress,
                settings_for=chosen.settings_for,
            )
        if progress is not None and stop.signum and sys.stderr.isatty():
            print(file=sys.stderr)  # end the progress line
        return _finish(args, write, results, [str(p) for p in problems], stop, chosen)


def summarize(
    results: list[FileResult], write: bool, problems: Sequence[str] = (), stopped_by: str = ""
) -> tuple[dict, str]:
    """The run's figures (as ``--report`` holds them) and its summary line.

    In a run that writes, a file counts as changed only once it is written; one whose
    write failed, or that was skipped because it changed on disk meanwhile, is counted
    apart, and its fixes are not counted as applied.
    """
    errors = len(problems) + sum(r.error is not None for r in results)
    done = [r for r in results if r.outcome in ("written", "would change")]
    failed = sum(r.outcome == "failed" for r in results)
    skipped = sum(r.skipped is not None for r in results)
    missing = sum(not r.reached for r in results)
    left = sum(not f.fixed for r in results for f in r.findings)
    unsafe = sum(output.needs_unsafe(f) for r in results for f in r.findings)
    fixes = sum(f.fixed for r in done for f in r.findings)
    unsafely = sum(fix_lines.fixed_unsafely(f) for r in done for f in r.findings)
    withheld = sum(f.withheld is not None for r in results for f in r.findings)
    withheld_files = sum(any(f.withheld for f in r.findings) for r in results)
    verb = "changed" if write else "would change"
    summary = {
        "files_scanned": len(results),
        f"files_{verb.replace(' ', '_')}": len(done),
        "files_not_written": failed,
        "files_skipped": skipped,
        "files_not_reached": missing,
        "fixes_applied" if write else "fixes_available": fixes,
        "unsafe_fixes_applied" if write else "unsafe_fixes_available": unsafely,
        "findings_left": left,
        "fixes_withheld": withheld,
        "errors": errors,
        "stopped_by": stopped_by or None,
    }
    parts = [f"{len(results)} files scanned", f"{len(done)} {verb}"]
    if failed:
        parts.append(f"{failed} not written (see the errors)")
    if skipped:
        parts.append(f"{skipped} skipped (changed on disk meanwhile)")
    if missing:
        parts.append(f"{missing} not reached")
    parts += [
        f"{fixes} fixes {'applied' if write else 'available'}"
        + (f" ({unsafely} unsafe, listed above)" if unsafely else ""),
        f"{left} findings left for a human",
        f"{errors} errors",
    ]
    if withheld:
        parts.insert(
            -2, f"{withheld} fixes withheld in {withheld_files} files (they would break them)"
        )
    line = ", ".join(parts)
    if unsafe:
        line += f" ({unsafe} of the findings can be fixed with --unsafe-fixes)"
    return summary, line


def _finish(
    args: argparse.Namespace,
    write: bool,
    results: list[FileResult],
    problems: list[str],
    stop: stopping.Stop,
    chosen: Choices | None = None,
) -> int:
    """Print the diffs, findings, errors and summary; write the report; the exit code.

    The summary names the targets used and where they came from (``chosen``'s record:
    the command line, the configuration, or each project's declared floors).
    """
    if args.diff:
        write_stdout(b"".join(unified_diff(r) for r in results if r.new_source is not None))
    # The findings left for a human go to stdout (`fsdp-migrate src/ > todo.txt`), unless
    # stdout carries the diff.
    out = sys.stderr if args.diff else sys.stdout
    for result in results:
        target = chosen.settings_for(result.path) if chosen is not None else None
        for finding in result.findings:
            if not finding.fixed and not args.silent:
                print(output.finding_line(result.path, finding, target=target), file=out)
    if not args.silent:  # what an unsafe fix changes is named, like what is left
        for line in fix_lines.unsafe_fix_lines(results, write):
            print(line, file=out)
    out.flush()
    errors = problems + [f"{r.path}: {r.error}" for r in results if r.error]
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    for line in skipped_lines(results):
        print(line, file=sys.stderr)
    summary, line = summarize(results, write, problems, stop.signal_name)
    if chosen is not None and chosen.targets is not None:
        summary["targets"] = chosen.targets.report()
    if not (args.quiet or args.silent):
        print(line, file=sys.stderr)
        no_fix = any(
            (f.no_fix or "").startswith("no fix runs on") for r in results for f in r.findings
        )
        for note in chosen.summary_lines(no_fix) if chosen is not None else []:
            print(note, file=sys.stderr)
        for note in (note for r in results for note in r.notes):
            print(note, file=sys.stderr)
    if args.show_fixes and not args.silent:  # beside the findings, after the summary
        out.write(fix_lines.fix_list(results, written=write))
    if stop.signum or summary["files_not_reached"]:
        print("\n".join(stopped_lines(stop.signal_name, results, write)), file=sys.stderr)
    if args.report:
        _report(args.report, results, summary)
    if stop.signum:
        return EXIT_SIGNAL_BASE + stop.signum
    if errors:
        return EXIT_ERROR
    changed = any(r.new_source is not None for r in results)
    if args.exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if changed or summary["findings_left"] else EXIT_CLEAN


def _stdin(
    settings: Settings,
    write: bool,
    name: str = "-",
    exit_zero: bool = False,
    show_fixes: bool = False,
) -> int:
    """Migrate standard input to standard output (it carries the code: findings on stderr)."""
    source = sys.stdin.buffer.read()
    result = process_source(name, source, settings)
    result.written = write and result.new_source is not None  # to standard output
    if result.error:
        print(f"error: {name}: {result.error}", file=sys.stderr)
        sys.stdout.buffer.write(source)
        return EXIT_ERROR
    sys.stdout.buffer.write(result.new_source if write and result.new_source else source)
    for finding in result.findings:
        if not finding.fixed:
            print(output.finding_line(name, finding, target=settings), file=sys.stderr)
    for line in fix_lines.unsafe_fix_lines([result], write):
        print(line, file=sys.stderr)
    if show_fixes:
        sys.stderr.write(fix_lines.fix_list([result], written=write))
    left = any(not f.fixed for f in result.findings)
    if exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if result.new_source is not None or left else EXIT_CLEAN


if __name__ == "__main__":
    sys.exit(main())
