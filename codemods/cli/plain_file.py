"""Files that name nothing legacy, answered before the lint loads (``fsdp-lint``'s start).

Most of a commit hook's calls are on files that name no old API at all, which the text
pre-filter's first test settles. The lint pays for its modules before it gets there:
``packaging``, ``pathlib``, the registry, the detector (about 37 ms of CPU over a bare
start of 11 as pre-commit runs it, benchmarks/README.md). :func:`settled` answers such
a run on its own, with what the lint prints for it, where it is certain to be the
lint's answer; :func:`codemods.lint.main` asks it first, and loads the lint's modules
only for every other run.

Certain means: a command line of flags and paths (:mod:`codemods.cli.quick_args`)
asking for the default report on fewer files than show progress; no
``[tool.fsdp-compat]`` configuration at or above them; each a readable Python file
(``.py`` or ``.pyi``), not left out by ``--force-exclude``, without NUL bytes, which
Python parses and which holds none of the texts any rule's pre-filter needs (a package
root as a whole word, or the word of a rule that needs no import, from the prebuilt table:
:func:`codemods.screen.filter_table.keys`), nor with several files a hook rule's method
name (the lint follows the classes of a file that holds one through the others to
their Lightning base).
Nothing else gives such a file a finding: a project's declared releases only choose
among the rules.

The table is the shipped registry's (the suite checks it): a rule added to the registry
without ``python -m codemods.screen.filter_table`` is not known here.
"""

from __future__ import annotations

import os
import re  # the console script's own wrapper has imported it
import sys

from codemods.batch.excludes import DEFAULT_EXCLUDES, named_excluded
from codemods.cli.progress import PROGRESS_MIN_FILES
from codemods.cli.quick_args import LINT, read

#: What the lint prints for a run with nothing to report (``codemods.cli.output.summary``).
ALL_PASSED = "All checks passed!\n"
#: The options that may differ from their defaults: none changes what a clean file shows.
_FREE = frozenset(
    {"paths", "force_exclude", "respect_gitignore", "exit_zero", "quiet", "silent"}
    | {"unsafe_fixes", "fsdp2_bridge", "no_cache", "jobs"}
)


def settled(argv: list[str]) -> int | None:
    r"""The exit status of a run certain to report nothing, its output written; else None.

    Example:
        >>> import tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "util.py")
        >>> with open(path, "w") as file:
        ...     _ = file.write("def add(a, b):\n    return a + b\n")
        >>> settled(["--force-exclude", path])
        All checks passed!
        0
        >>> with open(path, "w") as file:
        ...     _ = file.write("import fairscale\n")
        >>> settled([path]) is None
        True
    """
    args = read(argv, LINT)
    if args is None or not 0 < len(args.paths) < PROGRESS_MIN_FILES:
        return None
    changed = {key for key, value in vars(args).items() if value != LINT.defaults[key]}
    if changed - _FREE:
        return None
    # Several files: the lint follows a class through the others to a Lightning base
    # where a file holds a hook rule's method name, so none may hold one.
    words = _keys(several=len(args.paths) > 1)
    seen: dict[str, bool] = {}  # directory -> a configuration at or above it
    for path in args.paths:
        if path == "-" or not path.endswith((".py", ".pyi")) or not os.path.isfile(path):
            return None
        if args.force_exclude and named_excluded(path, DEFAULT_EXCLUDES):
            return None
        if words is None or not _plain(path, words) or _configured(path, seen):
            return None
    if not args.silent and not args.quiet:
        try:
            sys.stdout.write(ALL_PASSED)
            sys.stdout.flush()
        except BrokenPipeError:
            from codemods.cli.explaining import quiet_broken_pipe

            with quiet_broken_pipe():
                raise
    return 0


def _plain(path: str, words: tuple[frozenset[bytes], frozenset[bytes]]) -> bool:
    """Whether ``path`` holds none of ``words``, nor a NUL byte, and Python parses it.

    ``words``: package roots, which count as whole words only (an import names them so:
    ``compatible`` is no ``compat``), and words that count anywhere.
    """
    try:
        with open(path, "rb") as file:
            source = file.read()
    except OSError:
        return False
    roots, anywhere = words
    if b"\x00" in source or any(word in source for word in anywhere):
        return False
    if any(root in source and _whole(root).search(source) for root in roots):
        return False
    from codemods.batch.syntax_errors import compiled_already, syntax_error

    if os.path.splitext(path)[1] == ".py" and compiled_already(path, source):
        return True
    return syntax_error(source) is None


def _keys(several: bool) -> tuple[frozenset[bytes], frozenset[bytes]] | None:
    """Every text a rule's pre-filter needs, and with ``several`` every hook's name.

    None: the table cannot be read.
    """
    from codemods.screen import filter_table

    try:
        with open(filter_table.TABLE, "rb") as file:
            found = filter_table.keys(file.read(), hooks=several)
    except (OSError, IndexError):
        return None
    return found if found[0] else None


def _whole(word: bytes) -> re.Pattern[bytes]:
    """``word`` as a whole identifier: no ASCII letter, digit or ``_`` on either side."""
    return re.compile(rb"\b" + re.escape(word) + rb"\b")


def _configured(path: str, seen: dict[str, bool]) -> bool:
    """Whether a ``pyproject.toml`` at or above ``path`` holds ``[tool.fsdp-compat]``.

    As :func:`codemods.cli.config.find` looks for it (from the first path; here from
    each). ``seen``: the directories answered already.
    """
    directory = os.path.dirname(os.path.realpath(path))
    walked = []
    found = False
    while directory not in seen:
        walked.append(directory)
        candidate = os.path.join(directory, "pyproject.toml")
        if os.path.isfile(candidate):
            try:
                with open(candidate, "rb") as file:
                    found = b"tool.fsdp-compat" in file.read()
            except OSError:
                found = True  # the lint says why it cannot read it
            if found:
                break
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    else:
        found = seen[directory]
    for directory in walked:
        seen[directory] = found
    return found
