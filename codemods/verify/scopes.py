"""What a run of top-level statements binds and reads, as the fix verifier compares it.

:func:`scan` walks statements (:mod:`codemods.verify.bindings` holds the scoping rules) and
keeps only what the verifier compares: the module-level bindings, the references that
reach the module's globals, the imports and whether they are used.

A module is the sum of its top-level statements: each one's nested scopes see only each
other and the module's globals, so the facts of an unchanged statement can be reused
when a fix rewrites another one. A top-level class's body statements are alike, given
the names the class body binds (``within``).
"""

from __future__ import annotations

import ast

from codemods.verify.bindings import CLASS, MODULE, Pos, Scanner, Scope


class Facts:
    """What a run of top-level statements binds and reads, as seen from the module.

    Attributes:
        bound: Names bound at module level (``del`` and ``global`` count as bindings).
        refs: Each name's references that resolve to the module's globals.
        imports: Each module-level import binding's first position.
        exports: Each string of ``__all__`` with its positions.
        local_imports: ``(scope, name) -> [position, used]`` for imports in functions
            and classes; ``scope`` is the dotted qualified name (``Model.setup``).
        watched: For each watched name, its references as ``(scope, binder, position)``:
            the scope they stand in and the one whose binding they read (``""`` for
            the module's globals).
        star: Whether a ``from x import *`` is among the statements.
    """

    __slots__ = ("bound", "refs", "imports", "exports", "local_imports", "watched", "star")

    def __init__(self) -> None:
        self.bound: set[str] = set()
        self.refs: dict[str, list[Pos]] = {}
        self.imports: dict[str, Pos] = {}
        self.exports: dict[str, list[Pos]] = {}
        self.local_imports: dict[tuple[str, str], list] = {}
        self.watched: dict[str, list[tuple[str, str, Pos]]] = {}
        self.star = False


def class_level(body: list[ast.stmt]) -> tuple[set, bool]:
    """The names that statements of a class body bind in the class.

    Function and class bodies are not entered: this is cheap.

    Returns:
        The names, and whether the statements also import or declare names ``global``
        or ``nonlocal`` in the class (what :func:`scan`'s ``within`` does not stand for).
    """
    scanner = Scanner(0, shallow=True)
    scope = scanner.module.child(CLASS, "_")
    scanner.run(body, scope)
    return scope.bound, bool(scope.imports or scope.globals or scope.nonlocals or scanner.star)


def scan(
    body: list[ast.stmt],
    line_offset: int = 0,
    watch: frozenset[str] = frozenset(),
    within: tuple[str, set] | None = None,
) -> Facts:
    r"""What the top-level statements ``body`` bind and read, as seen from the module.

    Args:
        body: Top-level statements, as :func:`ast.parse` gives them.
        line_offset: Added to every line number (``body`` parsed from a slice of a file).
        watch: Names whose every reference to keep, with its scope (:attr:`Facts.watched`).
        within: ``(name, bound)``: ``body`` is part of the body of the top-level class
            ``name``, whose statements bind ``bound`` in it (:func:`class_level`).

    Returns:
        The statements' :class:`Facts`.

    Example:
        >>> from codemods.syntax.alias_positions import parse  # 3.9 places import names too
        >>> facts = scan(parse("import os\ndef f(p):\n    return os.sep + p + x\n").body)
        >>> sorted(facts.refs), facts.imports
        (['os', 'x'], {'os': (1, 7)})
    """
    scanner = Scanner(line_offset)
    scope = scanner.module
    if within is not None:
        scope = scope.child(CLASS, within[0])
        scope.bound.update(within[1])
        scanner.scopes.append(scope)
    scanner.run(body, scope)
    facts = Facts()
    facts.exports = scanner.exports
    facts.star = scanner.star
    refs = facts.refs
    for scope in scanner.scopes:
        # A name a function declares global is bound at module level where it binds it;
        # the declaration alone counts as a binding too (no flow analysis here).
        facts.bound.update(scope.globals)
        if scope.kind == MODULE:
            facts.bound.update(scope.bound)
            facts.imports.update(scope.imports)
        else:
            for name, pos in scope.imports.items():
                if name in scope.globals:
                    facts.imports.setdefault(name, pos)
                else:
                    facts.local_imports.setdefault((scope.key, name), [pos, False])
        resolved: dict[str, Scope | None] = {}
        for name, line, col in scope.refs:
            if name in resolved:
                target = resolved[name]
            else:
                target = resolved[name] = scope.resolve(name)
            if name in watch:
                binder = "" if target is None else target.key
                facts.watched.setdefault(name, []).append((scope.key, binder, (line, col)))
            if target is None:
                refs.setdefault(name, []).append((line, col))
                continue
            entry = facts.local_imports.get((target.key, name))
            if entry is None and name in target.imports:
                entry = facts.local_imports[(target.key, name)] = [target.imports[name], False]
            if entry is not None:
                entry[1] = True
    return facts
