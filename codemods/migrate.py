"""``python -m codemods.migrate PATH...``: rewrite legacy FSDP code to the current API.

Rewrites files in place by default; ``--diff`` prints the change and writes nothing;
``--check`` writes nothing and exits 1 if anything would change. ``-`` reads standard
input and writes the result to standard output.

Exit codes: 0 nothing left to do; 1 changes made or needed, or findings that need a
human; 2 usage, I/O or parse errors.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from codemods.cli import (
    EXIT_CLEAN,
    EXIT_ERROR,
    EXIT_FINDINGS,
    add_rule_options,
    base_parser,
    choices,
)
from codemods.config import ConfigError
from codemods.findings import Finding
from codemods.registry import REGISTRY, FixSafety
from codemods.runner import FileResult, process_files, process_source
from codemods.settings import Settings
from codemods.sources import discover


def build_parser() -> argparse.ArgumentParser:
    """The ``fsdp-migrate`` argument parser."""
    parser = base_parser(
        "fsdp-migrate",
        "Rewrite legacy FSDP, Lightning and FairScale code to the current torch and "
        "Lightning API, keeping formatting and comments.",
        epilog="Example:\n  python -m codemods.migrate --diff src/",
    )
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="files or directories; - for stdin"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--diff", action="store_true", help="print a unified diff, write nothing")
    mode.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if anything would change"
    )
    add_rule_options(parser)
    parser.add_argument(
        "--jobs", type=int, default=None, metavar="N", help="worker processes (default: all cores)"
    )
    parser.add_argument("--report", type=Path, metavar="FILE", help="write a JSON report")
    parser.add_argument("--quiet", action="store_true", help="print only findings and errors")
    return parser


#: Runs with at least this many files show progress on a terminal.
PROGRESS_MIN_FILES = 200


def _progress(total: int):
    """A progress printer for long runs on a terminal, else None."""
    if total < PROGRESS_MIN_FILES or not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        end = "\n" if done == total else ""
        print(f"\r{done}/{total} files", end=end, file=sys.stderr, flush=True)

    return show


def _diff(result: FileResult) -> str:
    old = result.old_source.decode("utf-8", "replace").splitlines(keepends=True)
    new = result.new_source.decode("utf-8", "replace").splitlines(keepends=True)
    # git's a/ and b/ prefixes for relative paths; an absolute path is shown as it is.
    before, after = (
        (result.path, result.path)
        if Path(result.path).is_absolute()
        else (f"a/{result.path}", f"b/{result.path}")
    )
    return "".join(difflib.unified_diff(old, new, before, after))


def _line(path: str, finding: Finding) -> str:
    """How a finding left by this run is listed: ``path:line:col CODE message``."""
    hint = " [fix with --unsafe-fixes]" if _unsafe_fixable(finding) else ""
    return f"{path}:{finding.line}:{finding.col} {finding.code} {finding.message}{hint}"


def _unsafe_fixable(finding: Finding) -> bool:
    return finding.fixable and not finding.fixed and REGISTRY[finding.code].fix is FixSafety.UNSAFE


def _report(path: Path, results: list[FileResult], summary: dict) -> None:
    data = {
        "summary": summary,
        "files": [
            {
                "path": r.path,
                "changed": r.new_source is not None,
                "written": r.written,
                "error": r.error,
                "findings": [
                    {
                        "line": f.line,
                        "column": f.col,
                        "code": f.code,
                        "message": f.message,
                        "fixable": f.fixable,
                        "fixed": f.fixed,
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
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        chosen = choices(args, args.paths, fix=True)
    except ConfigError as exc:
        parser.error(str(exc))
    write = not (args.diff or args.check)
    if args.paths == ["-"]:
        return _stdin(chosen.settings, write)
    files, problems = discover(args.paths, skip=chosen.skip())
    results = process_files(
        files,
        chosen.settings,
        write=write,
        jobs=args.jobs,
        progress=_progress(len(files)),
        settings_for=chosen.settings_for,
    )
    errors = [str(p) for p in problems]
    errors += [f"{r.path}: {r.error}" for r in results if r.error]
    changed = [r for r in results if r.new_source is not None]
    left = [(r.path, f) for r in results for f in r.findings if not f.fixed]
    fixes = sum(f.fixed for r in changed for f in r.findings)
    if args.diff:
        for result in changed:
            sys.stdout.write(_diff(result))
    for path, finding in left:
        print(_line(path, finding), file=sys.stderr)
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    verb = "changed" if write else "would change"
    summary = {
        "files_scanned": len(files),
        f"files_{verb.replace(' ', '_')}": len(changed),
        "fixes_applied" if write else "fixes_available": fixes,
        "findings_left": len(left),
        "errors": len(errors),
    }
    unsafe = sum(_unsafe_fixable(f) for _, f in left)
    if not args.quiet:
        print(
            f"{len(files)} files scanned, {len(changed)} {verb}, {fixes} fixes "
            f"{'applied' if write else 'available'}, {len(left)} findings left for a human, "
            f"{len(errors)} errors"
            + (f" ({unsafe} of the findings can be fixed with --unsafe-fixes)" if unsafe else ""),
            file=sys.stderr,
        )
    if args.report:
        _report(args.report, results, summary)
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if changed or left else EXIT_CLEAN


def _stdin(settings: Settings, write: bool) -> int:
    source = sys.stdin.buffer.read()
    result = process_source("-", source, settings)
    if result.error:
        print(f"error: -: {result.error}", file=sys.stderr)
        sys.stdout.buffer.write(source)
        return EXIT_ERROR
    sys.stdout.buffer.write(result.new_source if write and result.new_source else source)
    for finding in result.findings:
        if not finding.fixed:
            print(_line("-", finding), file=sys.stderr)
    left = any(not f.fixed for f in result.findings)
    return EXIT_FINDINGS if result.new_source is not None or left else EXIT_CLEAN


if __name__ == "__main__":
    sys.exit(main())
