"""What a behaviour's hooks may ask of, and tell, the engines that run them.

Two engines run a rule's behaviour (:class:`codemods.rules.api.Behaviour`): the libcst
:class:`Engine` in a fixing run, and the ``ast`` :class:`Detector` in lint and in the
screening of a fixing run. These protocols are what either offers a hook: the same
questions about names and nodes, on each tree's nodes (:class:`Resolver` is the part a
rename's translator may use, :class:`NameTable` the detector's scopes). Rule modules
import them from :mod:`codemods.rules.api`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from codemods.registry import Rule
from codemods.settings import Settings
from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any, Callable, Protocol

    from libcst.metadata import CodeRange
else:
    Protocol = object  # the checkers' protocols are plain classes at run time


class Resolver(Protocol):
    """What a translator may ask about the file (the engine answers from libcst metadata)."""

    def qualified(self, node: cst.CSTNode) -> set[str]:
        """The fully qualified names ``node`` may refer to."""

    def class_set(
        self, original: cst.BaseExpression, updated: cst.BaseExpression | None = None
    ) -> cst.BaseExpression | None:
        """``{...}`` for a class or a list/tuple/set display of classes; else None."""

    def applies(self, code: str) -> bool:
        """Whether this run applies rule ``code``'s fix."""


class Engine(Resolver, Protocol):
    """What a behaviour's hooks may ask of, and tell, the engine visiting the file.

    Attributes:
        scratch: State a behaviour keeps for the rest of the file, under its rule code.
        module: The module being visited (original nodes).
        text: The module's code, as the pass read it (``module.code`` without
            generating it).
    """

    scratch: dict[str, Any]
    module: cst.Module
    settings: Settings
    text: str

    def report(
        self,
        node: cst.CSTNode,
        rule: Rule,
        fixable_here: bool = True,
        quiet: bool = False,
        unsafe_here: bool = False,
        detail: str | None = None,
        withheld: str | None = None,
        why_not: str | None = None,
    ) -> bool:
        """Record a finding at ``node``; return whether this run applies its fix there.

        ``quiet`` applies the fix without a finding of its own (another one reports it);
        ``detail`` is added to the message; ``withheld`` says why a fix this run would
        apply is not written (then the answer is False).
        """

    def position(self, node: cst.CSTNode) -> CodeRange:
        """Where an original node stands in the module."""

    def silenced(self, node: cst.CSTNode, code: str) -> bool:
        """Whether a ``noqa`` comment silences rule ``code`` on ``node``'s first line."""

    def target_at_least(self, release: str) -> bool:
        """Whether the torch the code must run on is ``release`` or later."""

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The parent of an original node."""

    def nodes(self, kind: type) -> list[cst.CSTNode]:
        """Every node of class ``kind`` in the original module, in no set order."""

    def scope(self, node: cst.CSTNode) -> cst.metadata.Scope | None:
        """The scope an original node is in."""

    def need_import(self, module: str, name: str | None, asname: str | None = None) -> None:
        """Queue an import the rewritten file needs."""

    def need_import_beside(self, statement: cst.ImportFrom, name: str) -> None:
        """Import ``name`` in the original ``from m import`` ``statement``, where it is."""

    def insert_in_function(self, line: cst.SimpleStatementLine, statements: list[Any]) -> bool:
        """Put ``statements`` before ``line``, an original line in a function (False: none)."""

    def spelling(self, home: str, name: str) -> str | None:
        """How new code spells ``home``'s ``name`` (None: the module binds that object)."""

    def forget(self, node: cst.BaseExpression) -> None:
        """Queue the import behind ``node`` for removal where the file no longer uses it."""

    def replace(self, node: cst.CSTNode, new: cst.CSTNode | Callable[[Any], Any]) -> None:
        """Put ``new`` (or ``new(updated node)``) in place of the original ``node``."""

    def insert_before(self, line: cst.SimpleStatementLine, statements: list[cst.CSTNode]) -> None:
        """Put ``statements`` before the original statement line ``line``."""

    def rename_name(self, node: cst.Name, new: str) -> None:
        """Give the original ``Name`` node ``node`` the value ``new`` as the visit leaves it."""


class NameTable(Protocol):
    """The ``ast`` detector's scopes (:class:`codemods.astlint.scopes.Names`), as rules use them.

    Attributes:
        deleted: Names some ``del`` statement unbinds.
    """

    deleted: set[str]

    def qualified(self, node: ast.AST) -> set[str]:
        """The fully qualified names ``node`` may refer to."""

    def lookup(self, scope: Any, name: str) -> Any:
        """The scope that binds ``name`` as seen from ``scope``, or None."""

    def references(self, scope: Any, name: str) -> list[ast.Name]:
        """Every use of ``name`` that ``scope``'s binding of it reaches."""

    def scope_of_definition(self, node: ast.AST) -> Any:
        """The scope a function or lambda opens."""


class Detector(Protocol):
    """What a behaviour's ``ast`` half may ask of, and tell, the ``ast`` detector.

    The ``ast`` twin of :class:`Engine` (:class:`codemods.astlint.detector.Detector`
    implements it): the same questions about names and nodes, on ``ast`` nodes.

    Attributes:
        settings: The run's settings.
        scratch: State a behaviour keeps for the rest of the file, under its rule code.
        source: The module's bytes.
        tree: The module.
        names: Its scopes.
    """

    settings: Settings
    scratch: dict[str, Any]
    source: bytes
    tree: ast.Module
    names: NameTable

    def report(
        self,
        node: ast.AST,
        rule: Rule,
        fixable_here: bool = True,
        quiet: bool = False,
        unsafe_here: bool = False,
        why_not: str | None = None,
        detail: str | None = None,
    ) -> bool:
        """Record a finding at ``node`` as :meth:`Engine.report` would; always False."""

    def qualified(self, node: ast.AST) -> set[str]:
        """The fully qualified names ``node`` may refer to."""

    def parent(self, node: ast.AST) -> ast.AST | None:
        """The parent of a node."""

    def nodes(self, *kinds: type) -> list[ast.AST]:
        """The module's nodes of the exact types ``kinds``."""

    def scope(self, node: ast.AST) -> Any:
        """The scope a name, attribute or call is in."""

    def applies(self, code: str) -> bool:
        """Whether rule ``code``'s fix is part of this (or a fixing) run."""

    def class_set(self, node: ast.AST) -> ast.AST | None:
        """:meth:`Engine.class_set` on ``ast``."""

    def target_at_least(self, release: str) -> bool:
        """Whether the torch the code must run on is ``release`` or later."""

    def depends_on(self, nodes: Iterable[ast.AST]) -> None:
        """Record nodes elsewhere that a hook's answer rests on (a fixing run keeps them)."""

    def segment(self, node: ast.AST) -> str:
        """The source text of ``node``."""

    def lines(self) -> list[bytes]:
        """The module's lines, UTF-8 encoded."""


class PlanningEngine(Resolver, Protocol):
    """What :class:`codemods.rules.plan.Planner` asks of the libcst engine.

    :class:`codemods.engine.transformer.Engine` is one.
    """

    settings: Settings

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The parent of an original node."""

    def find(self, node: cst.CSTNode) -> tuple[str, Rule, str] | None:
        """The old name, rule and qualified name ``node`` refers to, if any."""

    def imported(self, node: cst.Import | cst.ImportFrom) -> list[Any]:
        """The aliases of an import that bring in an old name, with their rules."""

    def bindings(self, name: str) -> list[str | None]:
        """What binds ``name`` anywhere in the module (see ``plan_shadows.Bindings``)."""

    def new_name(self, rule: Rule, old: str) -> str | None:
        """The name ``old`` becomes under ``rule``'s fix."""

    def silenced(self, node: cst.CSTNode, code: str) -> bool:
        """Whether a ``noqa`` comment silences rule ``code`` on ``node``'s first line."""

    def cold(self, node: cst.CSTNode) -> bool:
        """Whether the visit passes over ``node``: nothing the plan needs is in it."""

    def position(self, node: cst.CSTNode) -> Any:
        """The syntactic range of an original node."""
