"""Adding the imports a fixing pass needs, as libcst's ``AddImportsVisitor`` adds them.

The visitor is a matcher-decorated codemod transformer: it needs ``libcst.codemod``
loaded, and each one built inspects every attribute of its class (twice: it builds an
import gatherer too) before it copies and visits the module, which costs more than the
fix on a training script.
:func:`add_imports` gives the same module from the statements alone:

- A name from a module the top import block already imports from (``from m import
  a``) goes into that line, before its names; a module or name already imported there
  is not imported again.
- Anything else gets a line of its own after the top import block (after a docstring
  or ``__strict__`` flag, ``__future__`` imports before the block), a blank line kept
  between the imports and the first statement after them: ``import m`` lines sorted,
  then ``import m as a``, then ``from m import ...`` per module. Where the block goes on
  past the lines of a new ``from`` line's package (the project's own imports after
  torch's), that line goes beside its package's instead, as isort and ruff place it:
  the one difference from the visitor.
- Before that, as :mod:`codemods.engine.imports.finish` asked of the visitor, a name from a
  module the top block does not import from but a later top-level ``from m import``
  line does (real scripts set things up between imports) goes into that later line.

``tests/test_import_adding.py`` compares the output with the visitor's, byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from codemods.syntax.cst_nodes import dotted
from codemods.syntax.lazy_libcst import cst

__all__ = ["add_imports", "is_import_line"]

#: ``(module, name or None, asname or None)``: an import the new code needs.
Wanted = tuple[str, "str | None", "str | None"]


def add_imports(
    tree: cst.Module, wanted: Sequence[Wanted], beside_packages: bool = True
) -> cst.Module:
    r"""``tree`` with the ``wanted`` imports it lacks.

    ``beside_packages``: a new ``from`` line whose package the top block imports before
    other lines (a project's own) goes beside that package's lines, as isort and ruff
    place it (see :func:`_beside_its_package`); False keeps the visitor's place, after
    the block.

    Example:
        >>> tree = cst.parse_module("'Doc.'\nimport os\nfrom m import b\nx = 1\n")
        >>> print(add_imports(tree, [("m", "a", None), ("sys", None, None)]).code, end="")
        'Doc.'
        import os
        from m import a, b
        import sys
        <BLANKLINE>
        x = 1
    """
    for module, name, asname in wanted:
        if module == "__future__" and (name is None or asname is not None):
            raise ValueError(f"cannot add this import of __future__: {name} as {asname}")
    wanted = list(dict.fromkeys(wanted))  # two fixes may need one name under one spelling
    body = list(tree.body)
    first_other = 1  # the first statement is the top block's whatever it is (a docstring)
    while first_other < len(body) and is_import_line(body[first_other]):
        first_other += 1
    body, left = _into_later_lines(body, list(wanted), first_other)
    if not left:
        return tree.with_changes(body=body)
    top = _added(body[: first_other + 1], left, tree.config_for_parsing, beside_packages)
    return tree.with_changes(body=[*top, *body[first_other + 1 :]])


def is_import_line(statement: cst.CSTNode) -> bool:
    """Whether ``statement`` is a line of imports and nothing else."""
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )


def _into_later_lines(
    body: list[cst.CSTNode], wanted: list[Wanted], first_other: int
) -> tuple[list[cst.CSTNode], list[Wanted]]:
    """Names whose module only a later top-level ``from m import`` line imports go there.

    Returns the new body and the imports still wanted.
    """
    top = {_from_module(statement) for statement in body[: first_other + 1]}
    left = []
    for item in wanted:
        module, name, _ = item
        index = None
        if name is not None and module not in top:
            later = range(first_other + 1, len(body))
            index = next((i for i in later if _from_module(body[i]) == module), None)
        if index is None:
            left.append(item)
            continue
        line = body[index]
        body[index] = line.with_changes(
            body=[_merged(line.body[0], *_missing([item], line.body[0]))]
        )
    return body, left


def _from_module(statement: cst.CSTNode) -> str | None:
    """``m`` of a line holding one absolute ``from m import a, b`` (no star), else None."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return None
    node = statement.body[0]
    if not isinstance(node, cst.ImportFrom) or isinstance(node.names, cst.ImportStar):
        return None
    return _absolute(node)


class _Block:
    """What a module's top import block imports (the visitor's gatherer's four tables)."""

    def __init__(self, nodes: Iterable[cst.Import | cst.ImportFrom]) -> None:
        self.modules: set[str] = set()  # import m
        self.module_aliases: dict[str, str] = {}  # import m as a
        self.names: dict[str, set[str]] = {}  # from m import n ("*": everything)
        self.name_aliases: dict[str, list[tuple[str, str]]] = {}  # from m import n as a
        for node in nodes:
            if isinstance(node, cst.Import):
                for alias in node.names:
                    if alias.asname is None:
                        self.modules.add(alias.evaluated_name)
                    else:
                        self.module_aliases[alias.evaluated_name] = alias.evaluated_alias
            else:
                self._from(node)

    def _from(self, node: cst.ImportFrom) -> None:
        module = _absolute(node)
        if module is None:
            return  # relative: not known without the package's name
        if isinstance(node.names, cst.ImportStar):
            self.names[module] = {"*"}
            return
        aliased = [
            (a.evaluated_name, a.evaluated_alias) for a in node.names if a.asname is not None
        ]
        if aliased:
            self.name_aliases.setdefault(module, []).extend(aliased)
        plain = {a.evaluated_name for a in node.names if a.asname is None}
        if plain:
            known = self.names.setdefault(module, set())
            if "*" in known:
                self.names[module] = {"*"}
                return
            known.update(plain)


def _absolute(node: cst.ImportFrom) -> str | None:
    """The module a ``from`` import names; None where it is relative."""
    if node.relative or node.module is None:
        return None
    return dotted(node.module)


def _missing(
    wanted: Sequence[Wanted], node: cst.ImportFrom
) -> tuple[list[str], list[tuple[str, str]]]:
    """The plain and the aliased names ``wanted`` from ``node``'s module it lacks.

    ``node`` is an absolute ``from`` import of names (no star).
    """
    block = _Block([node])
    module = _absolute(node)
    names = {n for m, n, a in wanted if m == module and n is not None and a is None}
    names -= block.names.get(module or "", set())
    aliases = [(n, a) for m, n, a in wanted if m == module and n is not None and a is not None]
    for pair in block.name_aliases.get(module or "", []):
        if pair in aliases:
            aliases.remove(pair)
    return sorted(names), sorted(aliases)


def _merged(node: cst.ImportFrom, names: list[str], aliases: list[tuple[str, str]]) -> Any:
    """``node`` with ``names`` and ``aliases`` before its own names."""
    if not names and not aliases:
        return node
    new = [cst.ImportAlias(name=cst.Name(name)) for name in names]
    new += [
        cst.ImportAlias(name=cst.Name(name), asname=cst.AsName(name=cst.Name(alias)))
        for name, alias in aliases
    ]
    return node.with_changes(names=[*new, *node.names])


def _added(
    body: list[cst.CSTNode],
    wanted: list[Wanted],
    config: cst.PartialParserConfig,
    beside_packages: bool = True,
) -> list[cst.CSTNode]:
    """``body``, a module's statements, with ``wanted`` added as the visitor adds them."""
    start = 1 if _docstring_or_strict(body) else 0
    end = start
    while end < len(body) and _one_import(body[end]):
        end += 1
    block = _Block(line.body[0] for line in body[start:end])  # type: ignore[attr-defined]

    modules = {m for m, n, a in wanted if n is None and a is None} - block.modules
    module_aliases = {m: a for m, n, a in wanted if n is None and a is not None}
    for module, alias in block.module_aliases.items():
        if module_aliases.get(module) == alias:
            del module_aliases[module]
    names = {
        module: {n for m, n, a in wanted if m == module and n is not None and a is None}
        for module in sorted({m for m, n, a in wanted if n is not None and a is None})
    }
    aliases = {
        module: [(n, a) for m, n, a in wanted if m == module and n is not None and a is not None]
        for module in sorted({m for m, n, a in wanted if n is not None and a is not None})
    }
    for module, pairs in block.name_aliases.items():
        for pair in pairs:
            if pair in aliases.get(module, ()):
                aliases[module].remove(pair)
                if not aliases[module]:
                    del aliases[module]
    for module, present in block.names.items():
        if module in names:
            names[module] = set() if "*" in present else names[module] - present
            if not names[module]:
                del names[module]

    body = list(body)
    for index in range(start, end):  # into the block's first line from each module
        node = body[index].body[0]
        if not isinstance(node, cst.ImportFrom) or isinstance(node.names, cst.ImportStar):
            continue
        module = _absolute(node)
        if module is None or (module not in names and module not in aliases):
            continue
        merged = _merged(node, sorted(names.pop(module, ())), sorted(aliases.pop(module, ())))
        body[index] = body[index].with_changes(body=[merged])
    if not (modules or module_aliases or names or aliases):
        return body

    froms: dict[str, list[tuple[str, str | None]]] = {}
    for module, pairs in aliases.items():
        froms.setdefault(module, []).extend(pairs)
    for module, plain in names.items():
        froms.setdefault(module, []).extend((name, None) for name in plain)

    def line(text: str) -> cst.CSTNode:
        return cst.parse_statement(text, config=config)

    def from_line(module: str) -> cst.CSTNode:
        pairs = sorted(froms[module], key=lambda pair: (pair[0], pair[1] or ""))
        listed = ", ".join(name if alias is None else f"{name} as {alias}" for name, alias in pairs)
        return line(f"from {module} import {listed}")

    block = list(body[start:end])
    beside: dict[int, list[str]] = {}  # index in the block -> modules whose lines follow it
    for module in froms:
        at = None if module == "__future__" or not beside_packages else _beside(block, module)
        if at is not None:
            beside.setdefault(at, []).append(module)
    for at in sorted(beside, reverse=True):
        lines = [from_line(module) for module in sorted(beside[at])]
        if at == -1:  # first in the block: the blank lines above the block stay above it
            lines[0] = lines[0].with_changes(leading_lines=block[0].leading_lines)
            block[0] = block[0].with_changes(leading_lines=())
        block[at + 1 : at + 1] = lines
    placed = {module for modules_there in beside.values() for module in modules_there}
    return [
        *body[:start],
        *[from_line(module) for module in froms if module == "__future__"],
        *block,
        *[line(f"import {module}") for module in sorted(modules)],
        *[line(f"import {module} as {alias}") for module, alias in module_aliases.items()],
        *[from_line(module) for module in froms if module not in placed | {"__future__"}],
        *_blank_line_before(body[end:]),
    ]


def _beside(block: list[cst.CSTNode], module: str) -> int | None:
    r"""Where a new ``from module import`` line goes when the block goes on past its package.

    After the block's last line of ``module``'s package, where lines of other imports
    (a project's own, ``import config``) follow it; among the package's consecutive
    ``from`` lines at its sorted place, where they are sorted as isort and ruff sort
    them. None (the end of the block, as libcst's visitor puts it) where the package's
    lines end the block, or it has none.

    Example:
        >>> block = cst.parse_module("import torch\nfrom torch.nn import L\nimport config\n")
        >>> _beside(list(block.body), "torch.optim")
        1
        >>> _beside(list(block.body), "torch.distributed.fsdp")
        0
        >>> _beside(list(block.body)[:2], "torch.optim") is None
        True
    """
    nodes = [line.body[0] for line in block]  # type: ignore[attr-defined]
    root = module.partition(".")[0]
    kin = [i for i, node in enumerate(nodes) if root in _roots(node)]
    if not kin or kin[-1] == len(block) - 1:
        return None
    last = kin[-1]
    run = last  # the package's consecutive `from` lines that end at its last line
    while run - 1 in kin and isinstance(nodes[run - 1], cst.ImportFrom):
        run -= 1
    if not isinstance(nodes[last], cst.ImportFrom):
        return last
    names = [(_absolute(nodes[i]) or "").lower() for i in range(run, last + 1)]  # type: ignore[arg-type]
    if names != sorted(names):
        return last
    before = [run + n for n, name in enumerate(names) if name <= module.lower()]
    return before[-1] if before else run - 1


def _roots(node: cst.Import | cst.ImportFrom) -> set[str]:
    """The top-level packages an import line names (none for a relative one)."""
    if isinstance(node, cst.ImportFrom):
        return {(_absolute(node) or ".").partition(".")[0]} - {""}
    return {alias.evaluated_name.partition(".")[0] for alias in node.names}


def _docstring_or_strict(body: Sequence[cst.CSTNode]) -> bool:
    """Whether the first statement is a docstring or a ``__strict__ = ...`` flag."""
    if not body or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1:
        return False
    small = body[0].body[0]
    if isinstance(small, cst.Expr):
        return isinstance(small.value, cst.SimpleString)
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
        return isinstance(target, cst.Name) and target.value == "__strict__"
    return False


def _one_import(statement: cst.CSTNode) -> bool:
    """Whether ``statement`` is a line holding one import and nothing else."""
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], (cst.Import, cst.ImportFrom))
    )


def _blank_line_before(statements: list[cst.CSTNode]) -> list[cst.CSTNode]:
    """``statements`` with a blank line before the first, unless one is there already."""
    if not statements:
        return statements
    first = statements[0]
    if first.leading_lines and first.leading_lines[0].comment is None:
        return statements
    lines = (cst.EmptyLine(), *first.leading_lines)
    return [first.with_changes(leading_lines=lines), *statements[1:]]
