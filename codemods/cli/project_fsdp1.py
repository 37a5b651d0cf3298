"""Where a project checks for FSDP1's class, across the files of one run (for FSDP401).

FSDP401 rewrites file by file, but a model crosses files: one module builds it
(``wrap_fsdp(model)``), another asks ``isinstance(module, FullyShardedDataParallel)``
or counts ``FullyShardedDataParallel.fsdp_modules(model)`` (a test, a checkpoint helper,
a library's own code). A file that keeps such a check stays FSDP1 where FSDP401 does
not rewrite it, and the check no longer holds for a model another file converted.
Before a run, :class:`ProjectFsdp1Checks` reads the run's files that name FSDP1's class
(a cheap text test first, then ``ast``) and settles which convert. A file that checks
but wraps nothing converts with its project's wrapper calls (a companion,
:attr:`codemods.settings.Settings.fsdp1_companion`) where every one of them converts and
its checks can follow them (:mod:`codemods.rules.fsdp401.companion`). Each file gets the
checks the *other* files of its project keep as FSDP1
(:attr:`codemods.settings.Settings.fsdp1_elsewhere`) where the file's models reach
them (:mod:`codemods.cli.project_reach`), and why: FSDP401 then withholds its
conversion, as it does for such a check in the file itself. A file that uses FSDP1's
class calls the bridge's model answers (``FSDP.state_dict_type(model, ...)``) converts
with its project's calls too, as ``FSDP1Api``'s, and puts them on the bridge
(:attr:`codemods.settings.Settings.fsdp1_api_elsewhere`); where it stays FSDP1 its class
calls keep the project FSDP1, as checks do (torch's FSDP1 takes no bridged model).

A check: ``isinstance``/``issubclass`` against torch's FSDP1 class, or a class-level
call other than those ``compat``'s ``FSDP1Api`` takes (the class as it is imported,
``FSDP`` or ``m.FullyShardedDataParallel``).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterable
from pathlib import Path

from codemods.cli.floors import find_project_root
from codemods.cli.fsdp1_instance_uses import instance_uses, may_use
from codemods.cli.fsdp2_dispatch import aware, dispatched, paired_checks
from codemods.cli.fsdp_spellings import (
    CLASS,
    class_spellings,
    classes,
    fsdp2_spellings,
    is_fsdp2,
    versions,
)
from codemods.cli.project_bounds import shown as _shown
from codemods.cli.project_bounds import vendored
from codemods.cli.project_calls import Unreferred
from codemods.cli.project_reach import ImportGraph, is_test
from codemods.cli.shared_walks import SharedWalks, forget, walk
from codemods.syntax.alias_positions import parse
from codemods.syntax.ast_nodes import dotted

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any

#: The project of the files with no project root (imports decide what reaches what).
LOOSE = Path("<no project root>")


Uses = list[tuple[int, str]]


def scan(
    tree: ast.Module, known: dict[str, object] | None = None
) -> tuple[list[int], Uses, Uses, Uses]:
    """In one walk: the lines ``tree`` calls FSDP1's class on, its checks, its bridged calls.

    And its uses FSDP2 models answer as well (``isinstance(m, (FSDP, FSDPModule))``, a
    chain that asks FSDP2's class too, code after an early return for FSDP2 models or
    behind ``if fsdp_version(m) == 1``, with ``known`` the project's such functions):
    they stand in no one's way, but their file is looked at as a companion.
    """
    from codemods.rules.fsdp401.kept import FSDP1_API  # not on lint's path otherwise

    spellings, fsdp2 = class_spellings(tree), fsdp2_spellings(tree)
    paired = paired_checks(tree, spellings.__contains__, lambda name: is_fsdp2(name, fsdp2))
    paired |= dispatched(tree, spellings.__contains__, lambda name: is_fsdp2(name, fsdp2), known)
    paired |= aware(tree, lambda name: is_fsdp2(name, fsdp2))
    wraps: list[int] = []
    checks: Uses = []
    calls: Uses = []
    answered: Uses = []
    for node in walk(tree):
        if isinstance(node, ast.Call):
            if dotted(node.func) in spellings:
                wraps.append(node.lineno)
            if isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass"):
                kinds = node.args[1] if len(node.args) == 2 else None
                names = [dotted(element) for element in classes(kinds)]
                both = id(node) in paired or any(is_fsdp2(name, fsdp2) for name in names)
                for name in names:
                    if name in spellings:
                        use = (node.lineno, f"{node.func.id}(..., {name})")
                        (answered if both else checks).append(use)
        elif isinstance(node, ast.Attribute) and not node.attr.startswith("__"):
            owner = dotted(node.value)
            if owner in spellings:
                use = (node.lineno, f"{owner}.{node.attr}")
                kind = calls if node.attr in FSDP1_API else checks
                (answered if id(node) in paired else kind).append(use)
    return sorted(wraps), sorted(checks), sorted(calls), sorted(answered)


def checks_in(tree: ast.Module, api: bool = False) -> list[tuple[int, str]]:
    r"""Each use of FSDP1's class in ``tree`` that only an FSDP1 model satisfies: (line, text).

    With ``api``: the class calls the bridge's model answers instead (``FSDP1Api``'s),
    which a plain FSDP2 model does not.

    Example:
        >>> source = (
        ...     "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        ...     "units = FSDP.fsdp_modules(model)\n"
        ...     "sharded = isinstance(model, (FSDP, DDP))\n"
        ...     "with FSDP.state_dict_type(model, kind):\n"
        ...     "    pass\n"
        ... )
        >>> checks_in(ast.parse(source))
        [(2, 'FSDP.fsdp_modules'), (3, 'isinstance(..., FSDP)')]
        >>> checks_in(ast.parse(source), api=True)
        [(4, 'FSDP.state_dict_type')]
    """
    return scan(tree)[2 if api else 1]


class ProjectFsdp1Checks:
    """The FSDP1 checks each project keeps among ``paths``, by file."""

    def __init__(self, paths: Iterable[Path], bridge: bool = False) -> None:
        self._bridge = bridge  # off: a converting file's class calls are DCP's, no FSDP1Api's
        self._by_file: dict[Path, list[tuple[int, str]]] = {}
        self._api_by_file: dict[Path, list[tuple[int, str]]] = {}
        self._root: dict[Path, Path | None] = {}
        # Files that call FSDP1's class (FSDP401 surveys them): the lines of the calls.
        self._wraps: dict[Path, list[int]] = {}
        self._converting: set[Path] = set()
        self._why: dict[Path, str] = {}  # why a file that checks stays FSDP1
        self._run: list[Path] = []  # every Python file of the run, for the import graph
        self._graph: ImportGraph | None = None
        # Checks FSDP2 models answer too: in no one's way where the file's own calls stay.
        self._answered: dict[Path, Uses] = {}
        # Companions whose own code cannot follow FSDP2 models (FSDP1's internals).
        self._refused: set[Path] = set()
        # FSDP1-only methods called in files that never name the class (a training loop):
        # no rule visits them, so they only keep back the wrappers whose models reach them.
        self._instance: dict[Path, Uses] = {}
        self._unreferred = Unreferred(self._run, self._import_graph)
        with SharedWalks():  # each module's questions share one walk of it
            self._survey(paths)
        self._project: dict[Path, Path] = {path: root or LOOSE for path, root in self._root.items()}

    def _survey(self, paths: Iterable[Path]) -> None:
        """Read and scan the files of the run that name or may use FSDP1's class."""
        parsed: list[tuple[Path, Path | None, ast.Module]] = []
        for path in paths:
            if not str(path).endswith(".py"):
                continue
            try:
                resolved = Path(path).resolve()
                text = resolved.read_bytes()
            except (OSError, RuntimeError):  # unreadable, or a symlink loop
                continue
            self._run.append(resolved)
            named = CLASS.encode() in text
            if not named and not may_use(text):
                continue
            try:
                tree = parse(text)
            except (SyntaxError, ValueError):
                continue  # the run reports it
            root = find_project_root(resolved)
            if vendored(resolved, root):
                continue  # someone else's code, copied in: not the project's
            if named:
                parsed.append((resolved, root, tree))
                continue
            uses = instance_uses(tree)
            forget(tree)  # asked nothing more: its nodes need not be kept
            if uses:
                self._instance[resolved], self._root[resolved] = uses, root
                self._unreferred.note(resolved, tree, [line for line, _ in uses])
        known = versions(tree for _, _, tree in parsed)
        for resolved, root, tree in parsed:
            wraps, checks, calls, answered = scan(tree, known)
            self._unreferred.note(resolved, tree, [line for line, _ in checks + calls])
            if wraps:
                self._wraps[resolved] = wraps
            if answered:
                self._answered[resolved] = answered
            for found, uses in ((self._by_file, checks + answered), (self._api_by_file, calls)):
                if uses:
                    found[resolved] = sorted(uses)
            if wraps or checks or calls or answered:
                self._root[resolved] = root

    def elsewhere(self, path: str | Path, api: bool = False, tests: bool = False) -> tuple:
        """What the other files of ``path``'s project keep, as ``file:line: `text```.

        Args:
            path: The file.
            api: The class calls only the bridge's model answers (and the checks of the
                files converted with the project's calls, which count on it), rather
                than the checks no FSDP2 model satisfies.
            tests: What the project's tests keep on ``path``'s models, which holds
                nothing there (``path`` is no test).
        """
        found = self._kept_elsewhere(path, api, tests)
        return tuple(
            f"{_shown(other, root)}:{line}: `{text}`"
            for other, root, uses in found
            for line, text in uses
        )

    def elsewhere_why(self, path: str | Path) -> str | None:
        """Why the file of the first of :meth:`elsewhere`'s checks stays FSDP1."""
        found = self._kept_elsewhere(path, api=False)
        if not found:
            return None
        other, _, uses = found[0]
        if other not in self._instance:
            return self._why.get(other)
        from codemods.rules.fsdp401.kept import KEPT_RECIPES  # not on lint's path otherwise

        recipe = KEPT_RECIPES.get(uses[0][1].rpartition(".")[2])
        what = f"write {recipe} there" if recipe else "port it by hand"
        return (
            "FSDP2 models lack the method, and that file names no FSDP class for a rule to "
            f"rewrite: {what}, and convert them together"
        )

    def _kept_elsewhere(
        self, path: str | Path, api: bool, tests: bool = False
    ) -> list[tuple[Path, Path | None, list[tuple[int, str]]]]:
        """:meth:`elsewhere`'s files in order, each with its project root and its uses."""
        by_file = {**self._by_file, **self._api_by_file, **self._instance}
        if not by_file:
            return []
        try:
            resolved = Path(path).resolve()
        except (OSError, RuntimeError):
            return []
        root = find_project_root(resolved)
        project = self._project.get(resolved, root or LOOSE)
        found = []
        for other in sorted(by_file):
            if other == resolved or self._project[other] != project:
                continue
            if not self._reaches(resolved, other):  # the models never get there
                continue
            converted = other in self._converting
            if api:  # rewritten to FSDP1Api's with the file: they need bridged models
                uses = self._api_by_file.get(other, []) if self._bridged(other) else []
                if converted and other not in self._wraps:
                    uses = sorted(uses + self._by_file.get(other, []))
            elif self._tests_only(resolved, other) != tests:
                continue  # a test's FSDP1 uses hold no code of the project's own
            else:  # FSDP1's own class calls take no bridged model (nothing is patched)
                own = self._by_file.get(other, []) + self._api_by_file.get(other, [])
                own += self._instance.get(other, [])
                uses = [] if converted else sorted(own)
                if other not in self._refused:  # what FSDP2 models answer is in no one's way
                    uses = [use for use in uses if use not in self._answered.get(other, ())]
                # nor a check in a function no file of the project names (not in a script
                # with no project root, nor in a test: pytest calls what no file names)
                if self._root.get(other) is not None and not is_test(other, self._root[other]):
                    unreferred = self._unreferred.holds_nothing
                    uses = [use for use in uses if not unreferred(other, use[0], resolved)]
            if uses:
                found.append((other, root, uses))
        return found

    def companion(self, path: str | Path) -> tuple[str, ...]:
        """For a file converted with its project's wrapper calls: those calls (``file:line``).

        Empty for any other file.
        """
        try:
            resolved = Path(path).resolve()
        except (OSError, RuntimeError):
            return ()
        if resolved not in self._converting or resolved in self._wraps:
            return ()
        root = self._root[resolved]
        return tuple(
            f"{_shown(other, root)}:{line}"
            for other in self._wrappers(self._project[resolved], resolved)
            for line in self._wraps[other]
        )

    def _wrappers(self, project: Path, reaching: Path) -> list[Path]:
        """The files of ``project`` with wrapper calls whose models reach ``reaching``."""
        return sorted(
            path
            for path in self._wraps
            if self._project[path] == project and self._reaches(path, reaching)
        )

    def _reaches(self, wrapper: Path, other: Path) -> bool:
        """Whether ``other`` sees the models ``wrapper`` builds (:class:`ImportGraph`)."""
        return other in self._import_graph().reach(wrapper)

    def _import_graph(self) -> ImportGraph:
        if self._graph is None:
            self._graph = ImportGraph.of(self._run, set(self._root.values()))
        return self._graph

    def links(self) -> list[tuple[Path, Path]]:
        """(wrapper file, converting file whose rewritten FSDP1 uses its models reach)."""
        mine, answered = self._by_file.get, self._answered.get
        return [
            (wrapper, path)
            for path in sorted(self._converting)
            if (self._api_by_file.get(path) and self._bridged(path))
            or set(mine(path, ())) - set(answered(path, ()))
            for wrapper in self._wrappers(self._project[path], path)
            if wrapper != path and not self._tests_only(path, wrapper)
        ]

    def _bridged(self, path: Path) -> bool:
        """Whether converted ``path``'s class calls are ``FSDP1Api``'s (a companion's, bridged)."""
        return path in self._converting and (self._bridge or path not in self._wraps)

    def _tests_only(self, path: Path, other: Path) -> bool:
        """Whether ``other`` is a test and ``path`` not (a test follows, or waits for a port)."""
        return is_test(other, self._root.get(other)) and not is_test(path, self._root.get(path))

    def settle(
        self,
        converts: Callable[[Path, tuple[str, ...], tuple[str, ...]], bool],
        follows: Callable[[Path, tuple[str, ...]], str | None] | None = None,
    ) -> None:
        """Leave out the checks of files that are converted themselves.

        Such a file's checks are rewritten with it (``FSDPModule``), so they stand in no
        other file's way. A file that checks but wraps nothing converts with its
        project's wrapper calls (a companion) where every one of them converts and
        ``follows`` says its checks can follow them. Which files convert depends on
        each other's checks: starting from every file that checks, a file stays in the
        set while it converts beside the checks of the files outside it, until the set
        holds still (it only shrinks, so this ends).

        Args:
            converts: Whether FSDP401 converts a file, given the checks and the class
                calls the rest of its project keeps.
            follows: Why FSDP401 does not convert a companion, given the wrapper calls it
                follows (None where it does); None: no file converts as a companion.
        """
        answers: dict[tuple, Any] = {}

        def answer(key: tuple, ask: Callable[[], Any]) -> Any:
            if key not in answers:
                answers[key] = ask()
            return answers[key]

        def wrapper_converts(path: Path) -> bool:
            checks, calls = self.elsewhere(path), self.elsewhere(path, api=True)
            return answer((path, checks, calls), lambda: converts(path, checks, calls))

        converting = {
            path
            for path in {*self._by_file, *self._api_by_file}
            if path in self._wraps
            or (follows is not None and self._wrappers(self._project[path], path))
        }
        while True:
            self._converting = converting
            kept = set()
            for path in sorted(converting):
                if path in self._wraps:
                    if wrapper_converts(path):
                        kept.add(path)
                    else:
                        self._why[path] = "its own FSDP1 wrapper calls stay"
                    continue
                # Its project's wrapper calls first, stopping at the first that stays
                # (most projects keep one): the companion's own run only where all convert.
                root = self._root[path]
                wrappers = self._wrappers(self._project[path], path)
                staying = next((w for w in wrappers if not wrapper_converts(w)), None)
                if staying is not None:
                    self._why[path] = f"{_shown(staying, root)}'s FSDP1 wrapper calls stay"
                    continue
                sites = self.companion(path)
                why = answer((path, sites), functools.partial(follows, path, sites))  # type: ignore[arg-type]
                if why is None:
                    kept.add(path)
                else:
                    self._why[path] = why
                    self._refused.add(path)
            if kept == converting:
                return
            converting = kept
