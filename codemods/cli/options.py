"""Pieces both command-line tools share: common options, configuration, exit codes."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from codemods._version import __version__
from codemods.batch.files import Problem, discover
from codemods.cli import config as configuration
from codemods.cli.targets import ProjectTargets
from codemods.releases import Releases, Span
from codemods.settings import Settings

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    import argparse
    from typing import Any, NamedTuple

    from codemods.cli.project_classes import ProjectClasses
    from codemods.cli.project_fsdp1 import ProjectFsdp1Checks
    from codemods.findings import Finding
else:
    from codemods.registry.named_tuple import NamedTuple

#: Nothing left to do.
EXIT_CLEAN = 0
#: Changes made or needed, or findings remain.
EXIT_FINDINGS = 1
#: Usage, I/O or parse errors.
EXIT_ERROR = 2
#: A run a signal stopped exits with this plus the signal's number, as shells report
#: it: 130 for SIGINT, 143 for SIGTERM.
EXIT_SIGNAL_BASE = 128


def base_parser(prog: str, description: str, epilog: str = "") -> argparse.ArgumentParser:
    """Build a parser with the options every fsdp-compat tool has (``--version``)."""
    import argparse  # here: a hook's command line is read without it (cli/quick_args.py)

    from codemods.cli.help_format import Formatter

    parser = argparse.ArgumentParser(
        prog=prog, description=description, epilog=epilog, formatter_class=Formatter
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def add_rule_options(parser: argparse.ArgumentParser) -> None:
    """The options that choose rules, fixes and target releases (lint and migrate alike)."""
    codes = "comma-separated codes or prefixes"
    parser.add_argument("--select", metavar="CODES", help=f"report only these ({codes})")
    parser.add_argument(
        "--extend-select",
        metavar="CODES",
        help=f"report these too, opt-in rules included ({codes})",
    )
    parser.add_argument("--ignore", metavar="CODES", help=f"never report these ({codes})")
    parser.add_argument(
        "--unsafe-fixes", action="store_true", help="also apply fixes marked unsafe"
    )
    parser.add_argument(
        "--target-torch",
        metavar="RANGE",
        help="the torch releases the code must run on: a release (2.2) or a range "
        "(2.4..2.13, 2.4..): report what is a problem on any of them, fix only to forms that "
        "run on all of them (default: the range its project declares, else from the oldest "
        "release the file's own API uses to the newest)",
    )
    parser.add_argument("--target-lightning", metavar="RANGE", help="the same, for Lightning")
    bridge = parser.add_mutually_exclusive_group()
    bridge.add_argument(
        "--fsdp2-bridge",
        dest="fsdp2_bridge",
        action="store_true",
        default=None,
        help="FSDP401 rewrites a call it cannot translate to plain FSDP2 code with certainty "
        "to one call of compat's FSDP1 bridge (a run-time dependency on compat) instead of "
        "leaving it FSDP1 for a human with its recipe",
    )
    bridge.add_argument(
        "--no-fsdp2-bridge",
        dest="fsdp2_bridge",
        action="store_false",
        default=None,
        help="FSDP401 writes plain FSDP2 code only (the default): a call it cannot translate "
        "with certainty stays FSDP1 for a human, with its recipe",
    )
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="the pyproject.toml to read (default: the nearest one with [tool.fsdp-compat])",
    )


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """The options that choose files, workers and how much is said (lint and migrate alike).

    The short flags ruff users type are here: ``-q``, ``-s``, ``-v``, ``-n`` (no cache
    exists to skip: accepted, and nothing changes), ``-e``.
    """
    import argparse

    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="files or directories (default: the current directory); - for stdin",
    )
    parser.add_argument(
        "--stdin-filename",
        metavar="PATH",
        help="read the code from stdin, as if it were this file (for its configuration)",
    )
    parser.add_argument(
        "--jobs", type=jobs, default=None, metavar="N", help="worker processes (default: all cores)"
    )
    parser.add_argument(
        "--force-exclude",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="apply the configuration's exclude to files named on the command line too "
        "(as pre-commit passes them)",
    )
    parser.add_argument(
        "--respect-gitignore",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="skip the files .gitignore ignores when walking directories (default: on)",
    )
    parser.add_argument(
        "-e", "--exit-zero", action="store_true", help="exit 0 even when findings remain"
    )
    talk = parser.add_mutually_exclusive_group()
    talk.add_argument(
        "-q", "--quiet", action="store_true", help="print only findings and errors, no summary"
    )
    talk.add_argument(
        "-s",
        "--silent",
        action="store_true",
        help="print nothing but errors; the exit code says it",
    )
    talk.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also say which configuration and files are used",
    )
    parser.add_argument(
        "-n", "--no-cache", action="store_true", help="accepted for ruff's users: there is no cache"
    )


def paths_of(args: argparse.Namespace) -> list[str]:
    """The paths to read: ``-`` where ``--stdin-filename`` is given, ``.`` where none are.

    ruff reads standard input whenever ``--stdin-filename`` is given, and checks the
    current directory when no path is.
    """
    if args.stdin_filename is not None:
        return ["-"]
    return list(args.paths) or ["."]


def _codes(text: str | None, option: str) -> tuple[str, ...] | None:
    """The selectors of a command-line option, checked (:func:`config.check_selectors`)."""
    if text is None:
        return None
    codes = [code for code in text.split(",") if code.strip()]
    return configuration.check_selectors(codes, option)


def jobs(text: str) -> int:
    """``--jobs``: a count of worker processes, at least 1.

    Example:
        >>> jobs("2")
        2
        >>> jobs("0")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: must be a whole number of at least 1, got '0'
    """
    import argparse

    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {text!r}")
    return count


class Choices(NamedTuple):
    """The configuration and the settings a run uses, from the file and the command line.

    Attributes:
        config: The ``[tool.fsdp-compat]`` table (or the defaults).
        settings: The settings for a file with no ``per-file-ignores`` and no declared
            target (the command line and the configuration only).
        targets: Each file's target releases where neither the command line nor the
            configuration sets them (its project's declared floors), recorded for the
            summary; None: none are looked up.
    """

    config: configuration.Config
    settings: Settings
    targets: ProjectTargets | None = None
    classes: ProjectClasses | None = None
    fsdp1_checks: ProjectFsdp1Checks | None = None

    def files(
        self, args: argparse.Namespace, classes: bool = True
    ) -> tuple[Choices, list[Path], list[Problem]]:
        """The files the command line names (:func:`~codemods.batch.files.discover`).

        Returns:
            These choices for a run over them (:meth:`with_files`; ``classes``: with the
            project classes), the files, and a problem for each path that does not exist.
        """
        files, problems = discover(
            args.paths,
            skip=self.skip(),
            force_exclude=args.force_exclude,
            respect_gitignore=args.respect_gitignore,
        )
        if args.verbose:
            print(f"checking {len(files)} files", file=sys.stderr)
        return self.with_files(files, classes), files, problems

    def with_files(self, paths: list[Path], classes: bool = True) -> Choices:
        """These choices for a run over ``paths``: the project classes across them read.

        Only where it can matter: two files or more, and a hook rule enabled (a file's
        own classes are followed by the rule itself); the project's FSDP1 checks where
        FSDP401 fixes.
        """
        if len(paths) < 2:
            return self
        # Here, not at the top: a one-file run (a commit hook's) never needs them.
        from codemods.cli.project_classes import ProjectClasses, hook_names
        from codemods.cli.project_fsdp1 import ProjectFsdp1Checks
        from codemods.registry import REGISTRY

        hooks = hook_names(self.settings) if classes else None
        checks = None
        if self.settings.enabled(REGISTRY["FSDP401"]):
            checks = ProjectFsdp1Checks(paths, bridge=self.settings.fsdp2_bridge)
            checks.settle(self._fsdp401_converts, self._fsdp401_follows)
        return self._replace(
            classes=ProjectClasses(paths, hooks) if hooks else None, fsdp1_checks=checks
        )

    def _fsdp401_findings(self, path: Path, **fields: Any) -> list[Finding] | None:
        """FSDP401's findings in ``path`` alone, fixing, with ``fields`` set (None: unread)."""
        from codemods.engine.run import run

        settings = self.settings_for(path).replace(
            select=("FSDP401",),
            ignore=(),
            fix=True,
            unsafe_fixes=True,
            **fields,
        )
        try:
            outcome = run(path.read_bytes(), settings, filename=str(path))
        except Exception:  # noqa: BLE001 - the run itself reports a file it cannot read
            return None
        return [f for f in outcome.findings if f.code == "FSDP401"]

    def _fsdp401_converts(
        self, path: Path, checks: tuple[str, ...], calls: tuple[str, ...]
    ) -> bool:
        """Whether FSDP401 converts ``path`` beside its project's other checks and calls."""
        found = self._fsdp401_findings(path, fsdp1_elsewhere=checks, fsdp1_api_elsewhere=calls)
        return any(f.fixed for f in found or ())

    def _fsdp401_follows(self, path: Path, sites: tuple[str, ...]) -> str | None:
        """Why FSDP401 does not convert ``path`` (wrapping nothing) with its project's calls.

        None where it does.
        """
        found = self._fsdp401_findings(path, fsdp1_companion=sites)
        if found is None:
            return "it cannot be read"
        if not found or any(f.fixed for f in found):
            return None  # rewritten, or nothing to rewrite: its checks answer FSDP2 already
        withheld = [f.withheld for f in found if f.withheld]
        return withheld[0].removeprefix("fix withheld: ") if withheld else "nothing to rewrite"

    def settings_for(self, path: str | Path) -> Settings:
        """The settings for ``path``: its ``per-file-ignores`` and its project's targets."""
        settings = self.settings
        extra = self.config.ignored_in(path)
        if extra:
            settings = settings.replace(ignore=settings.ignore + extra)
        declared = self.targets.for_file(path) if self.targets is not None else {}
        bases = self.classes.lightning_bases(path) if self.classes is not None else None
        if bases:
            settings = settings.replace(lightning_bases=bases)
        if self.fsdp1_checks is not None:
            checks = self.fsdp1_checks.elsewhere(path)
            calls = self.fsdp1_checks.elsewhere(path, api=True)
            sites = self.fsdp1_checks.companion(path)
            tests = self.fsdp1_checks.elsewhere(path, tests=True)
            if checks or calls or sites or tests:
                settings = settings.replace(
                    fsdp1_elsewhere=checks,
                    fsdp1_api_elsewhere=calls,
                    fsdp1_elsewhere_why=self.fsdp1_checks.elsewhere_why(path),
                    fsdp1_companion=sites,
                    fsdp1_tests_elsewhere=tests,
                )
        if declared and settings is self.settings:  # one copy per project, shared
            return self.targets.with_releases(settings, declared["releases"])  # type: ignore[union-attr]
        return settings.replace(**declared) if declared else settings

    def summary_lines(self, no_fix: bool = False) -> list[str]:
        """The ranges used and where they came from, for the run's summary.

        See :meth:`codemods.cli.targets.ProjectTargets.summary_lines`. ``no_fix``: some
        finding has no fix on its range; a last line says how to declare one.
        """
        lines = self.targets.summary_lines() if self.targets is not None else []
        if no_fix:
            lines.append(
                "note: a fix is made only where its new form runs on every release of the "
                "range; to change a range, declare the releases you support (torch>=2.4 in "
                'your requirements, target-torch = "2.4.." in [tool.fsdp-compat], or '
                "--target-torch 2.4..)"
            )
        return lines

    def skip(self) -> Callable[[Path], bool] | None:
        """The configuration's excludes, for walking directories."""
        if not self.config.exclude:
            return None
        return lambda path: configuration.excluded(path, self.config)


def choices(args: argparse.Namespace, paths: list[str], fix: bool) -> Choices:
    """Merge the nearest configuration with the command line (the command line wins).

    Raises:
        configuration.ConfigError: For a bad file or a bad release number.
    """
    path = args.config
    if path is None:
        path = configuration.find(configuration.start_of(paths))
    config = configuration.load(path)
    select = _codes(args.select, "--select")
    select = config.select if select is None else select
    extend = _codes(args.extend_select, "--extend-select") or config.extend_select
    if extend:  # an empty select means every rule that is not opt-in: extend those
        select = (*(select or _default_codes()), *extend)
    ignore = _codes(args.ignore, "--ignore")
    command_line = {
        framework: configuration.check_version(value, f"--target-{framework}") if value else None
        for framework, value in (("torch", args.target_torch), ("lightning", args.target_lightning))
    }
    configured = {
        framework: configuration.check_version(value, f"target-{framework}") if value else None
        for framework, value in (
            ("torch", config.target_torch),
            ("lightning", config.target_lightning),
        )
    }
    explicit = {
        framework: command_line[framework] or configured[framework] or Span()
        for framework in command_line
    }
    settings = Settings(
        select=tuple(select),
        ignore=config.ignore if ignore is None else ignore,
        fix=fix,
        unsafe_fixes=args.unsafe_fixes,
        fsdp2_bridge=_first_set(args.fsdp2_bridge, config.fsdp2_bridge, False),
        releases=Releases(**explicit),
    )
    # A range neither sets is the one the file's project declares (per file: one run may
    # cover several projects), else from the file's evidence floor to the newest release.
    return Choices(config, settings, ProjectTargets(command_line, configured, config.path))


def _first_set(*values: bool | None) -> bool:
    """The first value that is not None (the command line, the file, the default)."""
    return next(value for value in values if value is not None)


def _default_codes() -> tuple[str, ...]:
    """The codes reported by default (every rule that is not opt-in)."""
    from codemods.registry import REGISTRY

    return tuple(rule.code for rule in REGISTRY if not rule.opt_in)
