"""A commit hook's command line, read without building argparse's parser (issue 44).

pre-commit runs ``fsdp-lint --force-exclude FILE...`` and an editor ``fsdp-lint
--exit-zero --quiet FILE``: flags that take no value, and paths. Importing argparse
(with ``gettext`` and ``locale``) and building a tool's parser costs such a run about
4 ms of CPU, a tenth of what the lint adds to Python's start. :func:`read` reads the
command lines made only of whole flags and one run of plain paths, as argparse would;
every other command line (a value, an abbreviation, ``--help``, ``-``, anything
argparse would refuse) is left to argparse, which reads it as before. The tables below
are checked against the parsers by ``tests/test_start_up.py``.
"""

from __future__ import annotations

from types import SimpleNamespace

from codemods.records import Frozen

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any


class Tool(Frozen):
    """What :func:`read` needs to know of one tool's parser.

    Attributes:
        defaults: Every option's default, by ``dest``, as the parser sets them.
        flags: Each flag that takes no value: its ``dest`` and the value it stores.
        exclusive: The ``dest`` sets of the parser's mutually exclusive groups.
    """

    __slots__ = _fields = ("defaults", "flags", "exclusive")

    defaults: dict[str, Any]
    flags: dict[str, tuple[str, bool]]
    exclusive: tuple[frozenset[str], ...]

    def __init__(
        self,
        defaults: dict[str, Any],
        flags: dict[str, tuple[str, bool]],
        exclusive: tuple[frozenset[str], ...],
    ) -> None:
        self._set(defaults=defaults, flags=flags, exclusive=exclusive)


#: The options both tools share, with their defaults.
_SHARED: dict[str, Any] = {
    "select": None,
    "extend_select": None,
    "ignore": None,
    "unsafe_fixes": False,
    "target_torch": None,
    "target_lightning": None,
    "fsdp2_bridge": None,
    "config": None,
    "paths": [],
    "stdin_filename": None,
    "jobs": None,
    "force_exclude": False,
    "respect_gitignore": True,
    "exit_zero": False,
    "quiet": False,
    "silent": False,
    "verbose": False,
    "no_cache": False,
}
_SHARED_FLAGS: dict[str, tuple[str, bool]] = {
    "--unsafe-fixes": ("unsafe_fixes", True),
    "--fsdp2-bridge": ("fsdp2_bridge", True),
    "--no-fsdp2-bridge": ("fsdp2_bridge", False),
    "--force-exclude": ("force_exclude", True),
    "--no-force-exclude": ("force_exclude", False),
    "--respect-gitignore": ("respect_gitignore", True),
    "--no-respect-gitignore": ("respect_gitignore", False),
    "-e": ("exit_zero", True),
    "--exit-zero": ("exit_zero", True),
    "-q": ("quiet", True),
    "--quiet": ("quiet", True),
    "-s": ("silent", True),
    "--silent": ("silent", True),
    "-v": ("verbose", True),
    "--verbose": ("verbose", True),
    "-n": ("no_cache", True),
    "--no-cache": ("no_cache", True),
}
_SHARED_EXCLUSIVE = (frozenset({"fsdp2_bridge"}), frozenset({"quiet", "silent", "verbose"}))

#: ``fsdp-lint`` (:func:`codemods.lint.build_parser`).
LINT = Tool(
    {
        "fix": False,
        "diff": False,
        "show_fixes": False,
        "add_noqa": False,
        **_SHARED,
        "output_format": "text",
        "statistics": False,
        "explain": None,
    },
    {
        "--fix": ("fix", True),
        "--diff": ("diff", True),
        "--show-fixes": ("show_fixes", True),
        "--add-noqa": ("add_noqa", True),
        "--statistics": ("statistics", True),
        **_SHARED_FLAGS,
    },
    _SHARED_EXCLUSIVE,
)

#: ``fsdp-migrate`` (:func:`codemods.migrate.build_parser`).
MIGRATE = Tool(
    {"diff": False, "check": False, "show_fixes": False, **_SHARED, "report": None},
    {
        "--diff": ("diff", True),
        "--check": ("check", True),
        "--show-fixes": ("show_fixes", True),
        **_SHARED_FLAGS,
    },
    (frozenset({"diff", "check"}), *_SHARED_EXCLUSIVE),
)


def read(argv: list[str], tool: Tool) -> SimpleNamespace | None:
    """``argv`` as ``tool``'s parser reads it, where it holds only flags and paths.

    None where argparse must read it: an option it does not know here (one taking a
    value, an abbreviation, ``--help``), a path that starts with ``-``, paths on both
    sides of a flag, or one option given twice (argparse decides which wins, or refuses).

    Example:
        >>> args = read(["--force-exclude", "a.py", "b.py"], LINT)
        >>> args.force_exclude, args.paths, args.quiet
        (True, ['a.py', 'b.py'], False)
        >>> read(["--select", "FSDP1", "a.py"], LINT) is None
        True
    """
    values = dict(tool.defaults)
    given: set[str] = set()
    paths: list[str] = []
    ended = False  # the run of paths is over: a flag came after it
    for arg in argv:
        if not arg.startswith("-"):
            if ended:
                return None
            paths.append(arg)
            continue
        flag = tool.flags.get(arg)
        if flag is None:
            return None
        dest, value = flag
        if dest in given:
            return None
        given.add(dest)
        values[dest] = value
        ended = bool(paths)
    if any(len(group & given) > 1 for group in tool.exclusive):
        return None
    values["paths"] = paths
    return SimpleNamespace(**values)
