"""Checks for FSDP1's class in functions that a wrapper call's models cannot get.

A model reaches a check by being handed to the function that holds it. A module-level
function that no file the models reach names (:mod:`codemods.cli.project_reach`) gets
none of them: torchtune's ``contains_fsdp``, exported and called nowhere; verl's
``layered_summon_lora_params``, called by the workers, not by a test that imports the
same utilities. That is known only where the run holds what those files import from
their project: a module the run lacks may call anything
(:attr:`codemods.cli.project_reach.ImportGraph.missing`), so there every check holds.

A function counts as named where a file names it outside its own ``def``: a call, a
reference passed on (``map(f, ...)``, a callback), an attribute (``utils.f``), a
string other than an ``__all__`` entry (a registry, ``getattr``), or a decorator on it
(a framework may call it). Imports and ``__all__`` only re-export.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from codemods.cli.project_reach import ImportGraph


def functions_of(tree: ast.Module, lines: Iterable[int]) -> dict[int, str]:
    r"""The module-level function each of ``lines`` is in, by line (undecorated ones only).

    Example:
        >>> tree = ast.parse("def f():\n    return 1\n\n@cache\ndef g():\n    return 2\n")
        >>> functions_of(tree, [2, 5, 6])
        {2: 'f'}
    """
    wanted = set(lines)
    found: dict[int, str] = {}
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.decorator_list:
            continue
        end = getattr(node, "end_lineno", None) or node.lineno
        found.update((line, node.name) for line in wanted if node.lineno <= line <= end)
    return found


def referred_to(names: set[str], files: Iterable[Path]) -> dict[str, set[Path]]:
    r"""Which files of ``files`` name each of ``names`` outside their ``def``s and imports.

    Files are read as text first; only those that spell a name are parsed.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "lib.py").write_text("__all__ = ['unused']\ndef unused(m): ...\n")
        >>> _ = (folder / "use.py").write_text("from lib import used, unused\nused(model)\n")
        >>> found = referred_to({"used", "unused"}, sorted(folder.iterdir()))
        >>> {name: [path.name for path in paths] for name, paths in found.items()}
        {'used': ['use.py']}
    """
    found: dict[str, set[Path]] = {}
    if not names:
        return found
    spelled = re.compile(rb"\b(" + b"|".join(re.escape(n.encode()) for n in names) + rb")\b")
    for path in files:
        try:
            source = path.read_bytes()
        except OSError:
            continue
        if not spelled.search(source):
            continue
        try:
            here = _referred_in(ast.parse(source), names)
        except (SyntaxError, ValueError):  # the run reports it; it may name any it spells
            here = {match.group(1).decode() for match in spelled.finditer(source)}
        for name in here:
            found.setdefault(name, set()).add(path)
    return found


def _referred_in(tree: ast.Module, names: set[str]) -> set[str]:
    exported = {
        id(element)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        and "__all__" in {getattr(t, "id", None) for t in _targets(node)}
        for element in ast.walk(node.value or ast.Constant(None))
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in names:
            found.add(node.id)
        elif isinstance(node, ast.Attribute) and node.attr in names:
            found.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
            if node.decorator_list:
                found.add(node.name)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in exported
        ):
            found.update(name for name in names if re.search(rf"\b{name}\b", node.value))
    return found


def _targets(node: ast.stmt) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    return [node.target]  # type: ignore[attr-defined]


class Unreferred:
    """The checks of a run that sit in functions no file of the run names.

    Args:
        run: Every Python file of the run.
        graph: The run's import graph, asked for only when a check's function is.
    """

    def __init__(self, run: list[Path], graph: Callable[[], ImportGraph]) -> None:
        self._run, self._graph = run, graph
        self._functions: dict[Path, dict[int, str]] = {}
        self._referred: dict[str, set[Path]] | None = None
        self._whole: dict[Path, bool] = {}

    def note(self, path: Path, tree: ast.Module, lines: Iterable[int]) -> None:
        """Read which function each check of ``path`` (at ``lines``) is in."""
        found = functions_of(tree, lines)
        if found:
            self._functions[path] = found

    def holds_nothing(self, path: Path, line: int, wrapper: Path) -> bool:
        """Whether ``wrapper``'s models cannot get the function of ``path``'s check at ``line``.

        No file they reach names it (its own file included, where another of its
        functions calls it).

        Known only where every module the files ``wrapper``'s models reach import from
        their project is in the run: one the run lacks could call the function.
        """
        name = self._functions.get(path, {}).get(line)
        if name is None or not self._whole_for(wrapper):
            return False
        if self._referred is None:
            names = {n for found in self._functions.values() for n in found.values()}
            self._referred = referred_to(names, self._run)
        return not self._referred.get(name, set()) & self._graph().reach(wrapper)

    def _whole_for(self, wrapper: Path) -> bool:
        if wrapper not in self._whole:
            graph = self._graph()
            self._whole[wrapper] = not graph.missing & graph.reach(wrapper)
        return self._whole[wrapper]
