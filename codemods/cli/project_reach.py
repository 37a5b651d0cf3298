"""Which files of a project a model built in one file can reach, for FSDP401.

A check for FSDP1's class in one file (``isinstance(m, FSDP)``) stands in the way of a
wrapper call in another only where the call's model can get there. Within a project
(:mod:`codemods.cli.project_bounds`) a model travels along imports: the file that
builds it passes it to the functions it imports, or returns it to a file that imports
it, which passes it on. So a model built in file ``A`` reaches every file that some
file of the run imports together with ``A`` (directly or through other files): ``A``
itself, what it imports, the files that import ``A``, and what those import. Two
recipes that import the same library reach the library, not each other; two tests do
not reach each other either.

Imports are read from the run's files alone (no other file is opened). An import
whose module is not among them (a package whose ``__init__.py`` the run does not
hold, a tree copied in part) reaches every file of the run under the folder it names:
the package's modules may re-export each other.
"""

from __future__ import annotations

import ast
import posixpath
import re
from collections.abc import Iterable
from pathlib import Path, PurePath

from codemods.syntax.alias_positions import parse

#: Folder names that hold a project's tests.
TEST_FOLDERS = frozenset({"test", "tests", "testing", "unittests", "unit_tests"})


def is_test(path: PurePath, root: PurePath | None = None) -> bool:
    """Whether ``path`` is a test of its project (a test module, or under a tests folder).

    Only the folders below ``root`` count (without one, the file's own folder).

    Example:
        >>> root = PurePath("/tests/p")  # a folder above the root does not count
        >>> [is_test(root / p, root) for p in ("tests/utils/a.py", "pkg/test_io.py", "lib/io.py")]
        [True, True, False]
        >>> is_test(PurePath("/w/conftest.py")), is_test(PurePath("/w/tests/io.py"))
        (True, True)
    """
    name = path.name
    if root is not None and root in path.parents:
        folders = path.relative_to(root).parts[:-1]
    else:
        folders = path.parts[-2:-1]
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
        or any(part.lower() in TEST_FOLDERS for part in folders)
    )


#: The start of an import statement, at any depth (imports inside functions count).
_IMPORT = re.compile(rb"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import|import)[ \t(]", re.MULTILINE)


def imports_of(source: bytes) -> ast.Module:
    r"""The import statements of ``source``, as a module of them alone.

    Read without parsing the whole file (a large tree's files are parsed by the run
    anyway, one at a time): each line that starts an import, with the lines its
    parentheses or backslashes continue to; a line that only looks like one (in a
    docstring) and does not parse is left out.

    Example:
        >>> source = b"import os\ndef f():\n    from .a import (b,\n        c)\n"
        >>> [ast.unparse(s) for s in imports_of(source).body]
        ['import os', 'from .a import b, c']
    """
    found: list[ast.stmt] = []
    for match in _IMPORT.finditer(source):
        end = source.find(b"\n", match.start())
        end = len(source) if end < 0 else end
        text = source[match.start() : end]
        if b"(" in text and b")" not in text:
            close = source.find(b")", end)
            end = len(source) if close < 0 else close + 1
        while source[match.start() : end].rstrip().endswith(b"\\") and end < len(source):
            following = source.find(b"\n", end + 1)
            end = len(source) if following < 0 else following
        try:
            found += parse(source[match.start() : end].strip()).body
        except (SyntaxError, ValueError):
            continue
    return ast.Module(body=found, type_ignores=[])


def _modules(path: Path, tree: ast.Module, bases: list[Path]) -> set[tuple[Path, tuple[str, ...]]]:
    """Each module ``tree`` imports, as (a folder to look from, the module's parts)."""
    found: set[tuple[Path, tuple[str, ...]]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update((base, tuple(a.name.split("."))) for a in node.names for base in bases)
        elif isinstance(node, ast.ImportFrom):
            module = tuple(node.module.split(".")) if node.module else ()
            if node.level:
                parents = [path.parent, *path.parent.parents]
                if node.level - 1 >= len(parents):
                    continue
                starts = [parents[node.level - 1]]
            else:
                starts = bases
            for base in starts:
                if module:
                    found.add((base, module))
                found.update((base, (*module, alias.name)) for alias in node.names)
    return found


class ImportGraph:
    """The imports between the files of a run, by file (resolved paths)."""

    @classmethod
    def of(cls, run: Iterable[Path], projects: set[Path | None]) -> ImportGraph:
        """The graph of the files of ``run`` (resolved) in ``projects`` (roots; None: none).

        Vendored copies and files that do not parse are left out.
        """
        from codemods.cli.floors import find_project_root
        from codemods.cli.project_bounds import vendored

        roots: dict[Path, Path | None] = {}  # by folder: one walk up per folder
        trees: dict[Path, ast.Module] = {}
        copies: set[str] = set()
        for path in run:
            if path.parent not in roots:
                roots[path.parent] = find_project_root(path)
            root = roots[path.parent]
            if root not in projects:
                continue
            if vendored(path, root):
                copies.add(path.as_posix())  # not the project's code, but its modules
                continue
            try:
                trees[path] = imports_of(path.read_bytes())
            except OSError:
                continue  # the run reports it
        return cls(trees, {path: roots[path.parent] for path in trees}, copies)

    def __init__(
        self,
        trees: dict[Path, ast.Module],
        roots: dict[Path, Path | None],
        copies: Iterable[str] = (),
    ) -> None:
        """Read the imports of ``trees`` (each file's tree, with its project root or None).

        ``copies``: the run's vendored files (posix paths), modules of no one's reach.
        """
        # By text, not Path: a large tree tries a few million names.
        files = {path.as_posix(): path for path in trees}
        under: dict[str, set[Path]] = {}  # each folder's files
        for path in trees:
            for folder in path.parents:
                under.setdefault(folder.as_posix(), set()).add(path)
        held = files.keys() | set(copies)
        self.imports: dict[Path, set[Path]] = {}
        #: The files that import a module of their project the run does not hold.
        self.missing: set[Path] = set()
        for path, tree in trees.items():
            root = roots.get(path)
            if root is not None:  # a script's folder, the project's root, a src layout
                bases = [path.parent, root, root / "src"]
            else:
                bases = [path.parent, *path.parent.parents]
            targets: set[Path] = set()
            for base, parts in _modules(path, tree, bases):
                # The longest part of the dotted name the run holds: a module (`a.b.name`
                # of a/b.py), else a folder, all of whose files may be what it names.
                for depth in range(len(parts), 0, -1):
                    stem = posixpath.join(base.as_posix(), *parts[:depth])
                    exact = [files[n] for n in (f"{stem}.py", f"{stem}/__init__.py") if n in files]
                    if exact or stem in under:
                        targets.update(exact or under[stem])
                        break
            targets.discard(path)
            self.imports[path] = targets
            if root is not None and _lacks_a_module(path, tree, [root, root / "src"], held, under):
                self.missing.add(path)
        self._reach: dict[Path, set[Path]] = {}
        self._importers: dict[Path, set[Path]] = {path: set() for path in trees}
        for path, targets in self.imports.items():
            for target in targets:
                self._importers[target].add(path)

    def reach(self, path: Path) -> set[Path]:
        """The files a model built in ``path`` can reach (``path`` included).

        Example:
            >>> trees = {
            ...     Path("/p/recipes/a.py"): ast.parse("from lib.ckpt import save"),
            ...     Path("/p/recipes/b.py"): ast.parse("from lib import ckpt"),
            ...     Path("/p/lib/ckpt.py"): ast.parse("import os"),
            ... }
            >>> graph = ImportGraph(trees, dict.fromkeys(trees, Path("/p")))
            >>> sorted(p.as_posix() for p in graph.reach(Path("/p/recipes/a.py")))
            ['/p/lib/ckpt.py', '/p/recipes/a.py']
            >>> sorted(p.name for p in graph.reach(Path("/p/lib/ckpt.py")))
            ['a.py', 'b.py', 'ckpt.py']
        """
        if path not in self.imports:
            return {path}
        if path not in self._reach:
            self._reach[path] = _closure(_closure([path], self._importers), self.imports)
        return self._reach[path]


def _lacks_a_module(
    path: Path, tree: ast.Module, bases: list[Path], files: set[str], under: dict
) -> bool:
    """Whether ``tree`` imports a module whose package the run holds but not the module.

    A package is the run's where the first part of the module's name is a file or a
    folder of the run under the project's root (``bases``); the module is there where
    its whole name is one. A relative import names the project's own.
    """
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name.split(".") for alias in node.names]
            starts = bases
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module.split(".")]
            parents = [path.parent, *path.parent.parents]
            if node.level and node.level - 1 >= len(parents):
                continue
            starts = [parents[node.level - 1]] if node.level else bases
        else:
            continue
        for parts in names:
            stems = [posixpath.join(base.as_posix(), *parts) for base in starts]
            if any(s in under or f"{s}.py" in files or f"{s}/__init__.py" in files for s in stems):
                continue
            heads = [posixpath.join(base.as_posix(), parts[0]) for base in starts]
            relative = isinstance(node, ast.ImportFrom) and node.level
            if relative or any(h in under or f"{h}.py" in files for h in heads):
                return True
    return False


def _closure(starts: Iterable[Path], edges: dict[Path, set[Path]]) -> set[Path]:
    found = set(starts)
    todo = list(found)
    while todo:
        for other in edges.get(todo.pop(), ()):
            if other not in found:
                found.add(other)
                todo.append(other)
    return found
