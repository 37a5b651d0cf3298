r"""Lint on the ``ast`` tree: the libcst engine's findings, without libcst's parse.

:func:`codemods.astlint.lint.detect` walks the tree the pre-filter's second stage parsed
and does what :class:`codemods.engine.transformer.Engine` does in a run that fixes
nothing: the uses and imports of old names (names resolved by
:mod:`codemods.astlint.scopes`), the plan's verdict on whether each rename is certain
(:mod:`codemods.rules.plan`, the same rules on ``ast`` nodes),
and the behaviours' hooks for calls, ``partial``\\ s, definitions and classes. Each
behaviour's ``ast`` half sits beside its libcst half, in its kind's module or its
rule's module (``ast_call``, ``ast_partial``, ``ast_function``, ``ast_class_def``; a
:class:`codemods.rules.api.CallSiteFix`'s ``certain``). A behaviour whose hook has no
``ast`` half, or a construct :mod:`codemods.astlint.scopes` does not resolve exactly, raises
:class:`Undecided`, and the file goes to the libcst engine: the findings are the same
either way (``tests/test_astdetect.py`` proves it on every fixture and rule example).

Code in a ``try: ... except ImportError:`` block or a version-gated ``if`` is not
reported (:func:`codemods.syntax.gates.ast_fallback_regions`), ``# noqa`` silences as it does
for the engine.
"""

from __future__ import annotations

import ast
import io
import re
from collections.abc import Iterable

from codemods.astlint.scopes import Names, Undecided, dotted
from codemods.findings import Finding, no_fix
from codemods.registry import REGISTRY, Rule
from codemods.rules.index import INDEX
from codemods.rules.plan_aliases import answered_by_alias
from codemods.screen.noqa import Deferred, Suppressions
from codemods.settings import Settings
from codemods.syntax.ast_nodes import tree_index
from codemods.syntax.gates import ast_fallback_regions, inside_fallback

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Detector", "Undecided"]


class Detector:
    """The engine's lint pass over one module's ``ast`` tree.

    Args:
        source: The module's bytes.
        tree: ``ast.parse(source)``.
        settings: The run's settings (``fix`` must be off).
        suppressions: The module's ``noqa`` comments.
    """

    def __init__(
        self,
        source: bytes,
        tree: ast.Module,
        settings: Settings,
        suppressions: Suppressions | Deferred,
    ) -> None:
        self.source = source
        self.settings = settings
        self.suppressions = suppressions
        self.findings: list[Finding] = []
        self.scratch: dict[str, Any] = {}
        self.tree = tree
        self.names = Names(tree)
        self.parents = self.names.parents
        self.fallback = False
        self.fixable: set[str] = set()
        # Every node a hook reported on, kept or not (silenced, disabled, quiet): where a
        # fixing run's libcst pass may act (see codemods.engine.pruning).
        self.touched: list[ast.AST] = []
        self.reported: list[tuple[ast.AST, str]] = []  # each report's node and rule
        self._text: str | None = None
        self._lines: list[bytes] | None = None
        # Each (binder, name)'s answer in _dotted_access: a module's hundreds of
        # ``torch.x`` uses each went over every ``import torch.y`` (_dynamo/utils.py).
        self._dotted: dict[tuple[int, str], str | None] = {}

    # What hooks ask --------------------------------------------------------------------

    def qualified(self, node: ast.AST) -> set[str]:
        """The fully qualified names ``node`` may refer to."""
        return self.names.qualified(node)

    def nodes(self, *kinds: type) -> list[ast.AST]:
        """The module's nodes of the exact types ``kinds``, in source order per type."""
        index = tree_index(self.tree).by_type
        return [node for kind in kinds for node in index.get(kind, ())]

    def parent(self, node: ast.AST) -> ast.AST | None:
        """The parent of a node (arguments' parent is the ``keyword`` or the call)."""
        return self.parents.get(node)

    def applies(self, code: str) -> bool:
        """``Engine.applies``: whether rule ``code``'s fix is part of this (or a fixing) run."""
        rule = REGISTRY[code]
        return self.settings.applies_fix(rule) if self.settings.fix else self.settings.can_fix(rule)

    def text(self) -> str:
        """The module, decoded."""
        if self._text is None:
            import tokenize  # here: a hook's run may never ask for the text

            encoding, _ = tokenize.detect_encoding(io.BytesIO(self.source).readline)
            self._text = self.source.decode(encoding)
        return self._text

    def _regions(self, node: ast.AST) -> tuple[ast.AST, ...]:
        """:func:`ast_fallback_regions` of ``node`` in this source."""
        return ast_fallback_regions(node, self.segment)

    def segment(self, node: ast.AST) -> str:
        """The source text of ``node``."""
        lines = self.lines()
        first, last = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined]
        start, end = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
        if first == last:
            return lines[first][start:end].decode()
        parts = [lines[first][start:], *lines[first + 1 : last], lines[last][:end]]
        return b"\n".join(parts).decode()

    def lines(self) -> list[bytes]:
        """The module's lines, UTF-8 encoded (as ``ast`` counts columns)."""
        if self._lines is None:
            if self.source.isascii():  # bytes split at \r\n, \r and \n alone, as ast counts
                lines = self.source.splitlines()
                last = not lines or self.source.endswith((b"\n", b"\r"))  # an empty last line
                self._lines = [*lines, b""] if last else lines
            else:
                text = self.text()
                self._lines = [line.encode() for line in re.split(r"\r\n|\r|\n", text)]
        return self._lines

    def target_at_least(self, release: str) -> bool:
        """Whether every torch release the code must run on is ``release`` or later."""
        return self.settings.releases.at_least(release)

    def scope(self, node: ast.AST) -> Any:
        """The :class:`codemods.astlint.scopes.Scope` a name, attribute or call is in."""
        return self.names.scope_of.get(node)

    def class_set(self, node: ast.AST) -> ast.AST | None:
        """``Engine.class_set``: a set display, a non-empty list or tuple, or a class name."""
        if type(node) is ast.Set:
            return node
        if type(node) in (ast.List, ast.Tuple) and node.elts:  # type: ignore[attr-defined]
            return node
        if type(node) in (ast.Name, ast.Attribute) and self._names_a_class(node):
            return node
        return None

    def _names_a_class(self, node: ast.AST) -> bool:
        """``Engine._names_a_class``: the name is bound only by classes and imports."""
        name = dotted(node)
        scope = self.names.scope_of.get(node)
        if name is None or scope is None:
            return False
        root = name.split(".")[0]
        binder = self.names.lookup(scope, root)
        return binder is not None and root not in binder.nonclass

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
        """Record a finding (see ``Engine.report``); False: nothing is rewritten here."""
        self.touched.append(node)
        self.reported.append((node, rule.code))
        if self.fallback or not self.settings.enabled(rule):
            return False
        line, column = self.position(node)
        if self.suppressions.silences(line, rule.code):
            return False
        fixable = fixable_here and self.settings.can_fix(rule)
        if not quiet:
            self.findings.append(
                Finding(
                    line,
                    column + 1,
                    rule.code,
                    f"{rule.message} ({detail})" if detail else rule.message,
                    fixable,
                    False,
                    unsafe=fixable and unsafe_here,
                    no_fix=no_fix(self.settings, rule, fixable, why_not, explained=bool(detail)),
                )
            )
        return False

    def depends_on(self, nodes: Iterable[ast.AST]) -> None:
        """Record nodes elsewhere in the module that a hook's answer rests on.

        A fixing run's libcst pass must see them: :mod:`codemods.engine.pruning` keeps the
        functions they are in.
        """
        self.touched.extend(nodes)

    def position(self, node: ast.AST) -> tuple[int, int]:
        """1-based line and 0-based column in characters (``ast`` counts UTF-8 bytes)."""
        line, column = node.lineno, node.col_offset  # type: ignore[attr-defined]
        if column and not self.source.isascii():
            column = len(self.lines()[line - 1][:column].decode())
        return line, column

    def silenced(self, node: ast.AST, code: str) -> bool:
        """Whether a ``noqa`` comment silences rule ``code`` on ``node``'s first line."""
        return self.suppressions.silences(node.lineno, code)  # type: ignore[attr-defined]

    def find(self, node: ast.AST) -> tuple[str, Rule, str] | None:
        """``Engine.find``: the old name, rule and qualified name ``node`` refers to."""
        found = None
        parent = self.parents.get(node)
        namespace = type(parent) is ast.Attribute and parent.value is node  # type: ignore[attr-defined]
        if namespace and type(node) is ast.Name:
            self._dotted_access(node)
        for qualified in sorted(self.qualified(node)):
            match = INDEX.reference(qualified, module=namespace)
            if match is None:
                return None
            found = found or (match[0], match[1], qualified)
        return found

    def _dotted_access(self, node: ast.Name) -> None:
        """Libcst resolves ``a`` of ``a.b.c`` to ``import a.b`` too: refuse where that matters."""
        scope = self.names.scope_of[node]
        binder = self.names.lookup(scope, node.id)
        if binder is None:
            return
        asked = (id(binder), node.id)
        if asked not in self._dotted:
            self._dotted[asked] = _module_with_a_rule(binder.imports, node.id)
        key = self._dotted[asked]
        if key is not None:
            raise Undecided(f"`{key}` is imported as a module with a rule")

    def answered_by_import(self, node: ast.AST, rule: Rule) -> bool:
        """``Engine.answered_by_import``: a use whose finding is at its import."""
        from codemods.rules.plan import keeps_spelling

        root = node
        while type(root) is ast.Attribute:
            root = root.value  # type: ignore[attr-defined]
        if type(root) is not ast.Name:
            return False
        name = root.id  # type: ignore[attr-defined]
        bare = self._bare(node) if root is node else None
        binder = self.names.lookup(self.names.scope_of[root], name)
        if binder is self.names.module and name in self.names.aliases:
            return answered_by_alias(self.names.aliases[name], rule, bare)
        if binder is None or binder.others.get(name) or not binder.imports.get(name):
            return False
        for statement in binder.imports[name]:
            if inside_fallback(statement, self.parent, self._regions):
                return False  # an import left alone has no finding to answer for it
            kept = False
            for alias, found, old in self.imported(statement):
                if alias.asname is None and type(statement) is not ast.ImportFrom:
                    continue  # `import old.mod`: its uses spell the module
                local = alias.asname or alias.name
                if local == name and found is rule and keeps_spelling(rule, old, bare):
                    kept = True
            if not kept:
                return False
        return True

    def _bare(self, node: ast.AST) -> str | None:
        """The ``ast`` half of ``Engine._bare``: the keyword a use as it is is passed as."""
        parent = self.parent(node)
        if type(parent) is ast.Call:
            func = parent.func  # type: ignore[attr-defined]
            if func is node:
                return None
            callee = func.attr if type(func) is ast.Attribute else getattr(func, "id", "")
            first = parent.args and parent.args[0] is node  # type: ignore[attr-defined]
            return None if first and callee == "partial" else ""
        if type(parent) is ast.keyword:
            return parent.arg or ""  # type: ignore[attr-defined]
        if type(parent) in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            return None if node in parent.decorator_list else ""  # type: ignore[attr-defined]
        if type(parent) is ast.Attribute and parent.value is node:  # type: ignore[attr-defined]
            return None
        return ""

    @staticmethod
    def imported(node: ast.Import | ast.ImportFrom) -> list[tuple[ast.alias, Rule, str]]:
        """The aliases of an import that bring in an old name, with its rule and name."""
        if type(node) is ast.ImportFrom:
            if node.level or not node.module:  # type: ignore[attr-defined]
                return []
            prefix = f"{node.module}."  # type: ignore[attr-defined]
        else:
            prefix = ""
        found = []
        for alias in node.names:
            if alias.name == "*":
                return []
            match = INDEX.reference(prefix + alias.name, module=type(node) is ast.Import)
            if match is not None:
                found.append((alias, match[1], match[0]))
        return found


def _module_with_a_rule(imports: dict[str, list[ast.stmt]], name: str) -> str | None:
    """The first ``name.x`` of ``imports`` imported as a module a rule looks for, or None."""
    start = name + "."
    for key, statements in imports.items():
        if key.startswith(start):
            for statement in statements:
                from codemods.astlint.scopes import import_names

                if any(INDEX.reference(n, module=True) for n in import_names(statement, key)):
                    return key
    return None
