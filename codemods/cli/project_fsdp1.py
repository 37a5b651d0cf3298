"""Where a project checks for FSDP1's class, across the files of one run (for FSDP401).

FSDP401 decides file by file, but a model crosses files: one module builds it
(``wrap_fsdp(model)``), another asks ``isinstance(module, FullyShardedDataParallel)``
or counts ``FullyShardedDataParallel.fsdp_modules(model)`` (a test, a checkpoint helper,
a library's own code). A file that keeps such a check stays FSDP1 where FSDP401 does
not rewrite it, and the check no longer holds for a model another file converted.
Before a run, :class:`ProjectFsdp1Checks` reads the run's files that name FSDP1's class
(a cheap text test first, then ``ast``) and gives each file the checks the *other*
files of its project keep (:attr:`codemods.settings.Settings.fsdp1_elsewhere`): FSDP401
then withholds its conversion, as it does for such a check in the file itself. Their
uses of FSDP1's class calls that the bridge's model answers (``FSDP.state_dict_type(
model, ...)`` in a checkpoint helper) put the file's calls on the bridge instead of
plain FSDP2 code (:attr:`codemods.settings.Settings.fsdp1_api_elsewhere`).

A check is a use of torch's FSDP1 class that neither the rewrite of its own file nor the
bridge's model answers: ``isinstance``/``issubclass`` against it, and its class-level
calls other than those ``compat``'s ``FSDP1Api`` takes. A file's class is found
through ``from torch.distributed.fsdp import FullyShardedDataParallel [as X]`` (or the
class's own module) and ``import torch.distributed.fsdp as m`` / ``m.X``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from pathlib import Path

from codemods.cli.floors import find_project_root
from codemods.syntax.ast_nodes import dotted

#: The modules FSDP1's class is imported from.
FSDP_MODULES = (
    "torch.distributed.fsdp",
    "torch.distributed.fsdp.fully_sharded_data_parallel",
)
CLASS = "FullyShardedDataParallel"


def _spellings(tree: ast.Module) -> set[str]:
    """The dotted spellings of torch's FSDP1 class in a module (module-level imports)."""
    found = {f"{module}.{CLASS}" for module in FSDP_MODULES}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in FSDP_MODULES and not node.level:
            found.update(a.asname or a.name for a in node.names if a.name == CLASS)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in FSDP_MODULES and alias.asname:
                    found.add(f"{alias.asname}.{CLASS}")
    return found


def scan(tree: ast.Module) -> tuple[bool, list[tuple[int, str]], list[tuple[int, str]]]:
    """In one walk: whether ``tree`` calls FSDP1's class, its checks, its bridged class calls."""
    from codemods.rules.fsdp401.kept import FSDP1_API  # not on lint's path otherwise

    spellings = _spellings(tree)
    wraps = False
    checks: list[tuple[int, str]] = []
    calls: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            wraps = wraps or dotted(node.func) in spellings
            if isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass"):
                kinds = node.args[1] if len(node.args) == 2 else None
                elements = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
                for element in elements:
                    name = dotted(element) if element is not None else None
                    if name in spellings:
                        checks.append((node.lineno, f"{node.func.id}(..., {name})"))
        elif isinstance(node, ast.Attribute) and not node.attr.startswith("__"):
            owner = dotted(node.value)
            if owner in spellings:
                kind = calls if node.attr in FSDP1_API else checks
                kind.append((node.lineno, f"{owner}.{node.attr}"))
    return wraps, sorted(checks), sorted(calls)


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

    def __init__(self, paths: Iterable[Path]) -> None:
        self._by_file: dict[Path, list[tuple[int, str]]] = {}
        self._api_by_file: dict[Path, list[tuple[int, str]]] = {}
        self._root: dict[Path, Path | None] = {}
        self._wraps: set[Path] = set()  # files that call FSDP1's class (FSDP401 surveys them)
        self._converting: set[Path] = set()
        for path in paths:
            if not str(path).endswith(".py"):
                continue
            try:
                resolved = Path(path).resolve()
                text = resolved.read_bytes()
            except (OSError, RuntimeError):  # unreadable, or a symlink loop
                continue
            if CLASS.encode() not in text:
                continue
            try:
                tree = ast.parse(text)
            except (SyntaxError, ValueError):
                continue  # the run reports it
            wraps, checks, calls = scan(tree)
            if wraps:
                self._wraps.add(resolved)
            for found, uses in ((self._by_file, checks), (self._api_by_file, calls)):
                if uses:
                    found[resolved] = uses
                    self._root[resolved] = find_project_root(resolved)

    def elsewhere(self, path: str | Path, api: bool = False) -> tuple[str, ...]:
        """What the other files of ``path``'s project keep, as ``file:line: `text```.

        Args:
            path: The file.
            api: The class calls only the bridge's model answers, rather than the checks
                no FSDP2 model satisfies.
        """
        by_file = self._api_by_file if api else self._by_file
        if not by_file:
            return ()
        try:
            resolved = Path(path).resolve()
        except (OSError, RuntimeError):
            return ()
        root = find_project_root(resolved)
        return tuple(
            f"{_shown(other, root)}:{line}: `{text}`"
            for other, checks in sorted(by_file.items())
            if other != resolved
            and self._root[other] == root
            and (api or other not in self._converting)
            for line, text in checks
        )

    def settle(self, converts: Callable[[Path, tuple[str, ...], tuple[str, ...]], bool]) -> None:
        """Leave out the checks of files that are converted themselves.

        Such a file's checks are rewritten with it (``FSDPModule``), so they stand in no
        other file's way. Which files convert depends on each other's checks: starting
        from every file that both wraps and checks, a file stays in the set while it
        converts beside the checks of the files outside it, until the set holds still
        (it only shrinks, so this ends).

        Args:
            converts: Whether FSDP401 converts a file, given the checks and the class
                calls the rest of its project keeps.
        """
        converting = {path for path in self._by_file if path in self._wraps}
        while True:
            self._converting = converting
            kept = {
                path
                for path in converting
                if converts(path, self.elsewhere(path), self.elsewhere(path, api=True))
            }
            if kept == converting:
                return
            converting = kept


def _shown(path: Path, root: Path | None) -> str:
    """``path`` relative to its project's root where it has one."""
    if root is not None:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            pass
    return path.as_posix()
