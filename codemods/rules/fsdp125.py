"""FSDP125: FSDP2's ``set_reduce_scatter_divide_factor`` as ``set_gradient_divide_factor``.

A method of ``FSDPModule``: the receiver's type is only certain where the file makes
it, so the rule starts from ``fully_shard(...)`` calls. Certain: the call's own result
(``fully_shard(m).set_reduce_scatter_divide_factor(f)``), and a name the call binds or
shards in place (``m = fully_shard(m)``, ``fully_shard(m)``), used later in the same block
(function body, loop body, ...) with no assignment in between. Other uses
of that name are reported for a human; receivers the file does not shard are not found.
"""

from __future__ import annotations

import ast

from codemods.rules.api import Behaviour, Detector, Engine
from codemods.syntax.cst_nodes import is_plain_positional, keyword
from codemods.syntax.lazy_libcst import cst

OLD_METHOD = "set_reduce_scatter_divide_factor"
NEW_METHOD = "set_gradient_divide_factor"


def _statement(engine: Engine, node: cst.CSTNode) -> tuple[cst.CSTNode, cst.CSTNode] | None:
    """The body owner (module or block) and the statement of it that holds ``node``."""
    child, parent = node, engine.parent(node)
    while parent is not None:
        if isinstance(parent, (cst.Module, cst.IndentedBlock)):
            return parent, child
        child, parent = parent, engine.parent(parent)
    return None


def _index(engine: Engine, body: cst.CSTNode, node: cst.CSTNode) -> int | None:
    """The index in ``body`` of the statement holding ``node`` (None: not in that body)."""
    child, parent = node, engine.parent(node)
    while parent is not None and parent is not body:
        child, parent = parent, engine.parent(parent)
    return body.body.index(child) if parent is body else None


def _sharded_name(engine: Engine, call: cst.Call) -> cst.Name | None:
    """The name ``call`` (a ``fully_shard``) binds or shards in place, if any."""
    parent = engine.parent(call)
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        target = parent.targets[0].target
        return target if isinstance(target, cst.Name) else None
    if isinstance(parent, cst.Expr):
        first = [a for a in call.args if is_plain_positional(a) or keyword(a) == "module"]
        value = first[0].value if first else None
        return value if isinstance(value, cst.Name) else None
    return None


# The ast half --------------------------------------------------------------------------
#
# libcst's blocks are a module's statements and indented blocks; the statements after a
# colon on its line (`if c: a; b`) are a suite, part of the compound statement's own
# block; `a; b` on one line is one statement (a ``SimpleStatementLine``).


def _ast_block(detector: Detector, parent: ast.AST, child: ast.AST) -> list[ast.stmt] | None:
    """The statement list of ``parent`` holding ``child``, where libcst makes it a block."""
    from codemods.syntax.ast_nodes import Undecided

    if type(parent) is ast.Module:
        return parent.body  # type: ignore[attr-defined]
    for field in ("body", "orelse", "finalbody"):
        statements = getattr(parent, field, None)
        if type(statements) is not list or not any(child is s for s in statements):
            continue
        first = statements[0]
        if field == "orelse" and type(parent) is ast.If and type(first) is ast.If:
            if detector.lines()[first.lineno - 1][first.col_offset :].startswith(b"elif"):
                return None  # an `elif`: libcst's If.orelse is the If itself
        lines = detector.lines()
        if lines[first.lineno - 1][: first.col_offset].strip():
            return None  # a suite after the colon
        if first.lineno > 1 and lines[first.lineno - 2].rstrip().endswith(b"\\"):
            raise Undecided("a block after a line continuation")
        return statements
    return None


def _ast_lines(statements: list[ast.stmt]) -> dict[int, int]:
    """Each statement's index among libcst's statements (``a; b`` share one)."""
    found: dict[int, int] = {}
    index = -1
    for number, statement in enumerate(statements):
        if not number or statement.lineno > statements[number - 1].end_lineno:  # type: ignore[operator]
            index += 1
        found[id(statement)] = index
    return found


def _ast_statement(detector: Detector, node: ast.AST) -> tuple[list[ast.stmt], int] | None:
    """:func:`_statement` on ``ast``: the block holding ``node`` and its statement's index."""
    child, parent = node, detector.parent(node)
    while parent is not None:
        block = _ast_block(detector, parent, child)
        if block is not None:
            return block, _ast_lines(block)[id(child)]
        child, parent = parent, detector.parent(parent)
    return None


def _ast_index(detector: Detector, lines: dict[int, int], node: ast.AST) -> int | None:
    """:func:`_index` on ``ast``: the index of the block statement holding ``node``."""
    while node is not None:
        if id(node) in lines:
            return lines[id(node)]
        node = detector.parent(node)
    return None


def _ast_at(block: list[ast.stmt], lines: dict[int, int], at: tuple[int, int]) -> int | None:
    """The index of the block statement that spans position ``at``, if any."""
    for statement in block:
        start = (statement.lineno, statement.col_offset)
        decorators = getattr(statement, "decorator_list", None)
        if decorators:
            start = (decorators[0].lineno, 0)
        if start <= at <= (statement.end_lineno, statement.end_col_offset):  # type: ignore[operator]
            return lines[id(statement)]
    return None


def _ast_sharded_name(detector: Detector, call: ast.Call) -> str | None:
    """:func:`_sharded_name` on ``ast``."""
    from codemods.syntax.ast_nodes import arguments, keyword, plain_positional

    parent = detector.parent(call)
    if type(parent) is ast.Assign and len(parent.targets) == 1:
        target = parent.targets[0]
        return target.id if type(target) is ast.Name else None
    if type(parent) is ast.Expr:
        first = [a for a in arguments(call) if plain_positional(a) or keyword(a) == "module"]
        value = first[0].value if first and type(first[0]) is ast.keyword else (first or [None])[0]
        return value.id if type(value) is ast.Name else None
    return None


class Fsdp125(Behaviour):
    """Rename the method where ``fully_shard`` certainly made the receiver."""

    def calls(self) -> tuple[str, ...]:
        return tuple(old.rpartition(".")[0] for old in self.rule.old)

    def _found(self, engine: Engine, attribute: cst.Attribute, certain: bool) -> None:
        seen = engine.scratch.setdefault(self.rule.code, set())
        if id(attribute) in seen:
            return
        seen.add(id(attribute))
        if engine.report(attribute, self.rule, fixable_here=certain) and certain:
            engine.rename_name(attribute.attr, NEW_METHOD)

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        parent = engine.parent(original)
        if isinstance(parent, cst.Attribute) and parent.attr.value == OLD_METHOD:
            self._found(engine, parent, certain=True)
            return updated
        name = _sharded_name(engine, original)
        where = _statement(engine, original)
        scope = engine.scope(original)
        if name is None or where is None or scope is None:
            return updated
        body, statement = where
        here = body.body.index(statement)
        later = [
            index
            for assignment in scope.assignments[name.value]
            if (node := getattr(assignment, "node", None)) is not None
            and (index := _index(engine, body, node)) is not None
            and index > here
        ]
        for access in scope.accesses[name.value]:
            attribute = engine.parent(access.node)
            if not (
                isinstance(attribute, cst.Attribute)
                and attribute.value is access.node
                and attribute.attr.value == OLD_METHOD
            ):
                continue
            index = _index(engine, body, access.node)
            certain = index is not None and index > here and not any(i <= index for i in later)
            self._found(engine, attribute, certain)
        return updated

    def _ast_found(self, detector: Detector, attribute: ast.Attribute, certain: bool) -> None:
        seen = detector.scratch.setdefault(self.rule.code, set())
        if id(attribute) in seen:
            return
        seen.add(id(attribute))
        # libcst's position of a node leaves out its own parentheses, as ast's does
        detector.report(attribute, self.rule, fixable_here=certain)

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        from codemods.syntax.ast_nodes import Undecided

        parent = detector.parent(call)
        if type(parent) is ast.Attribute and parent.attr == OLD_METHOD:
            self._ast_found(detector, parent, certain=True)
            return
        name = _ast_sharded_name(detector, call)
        if name is None:
            return
        where = _ast_statement(detector, call)
        scope = detector.scope(call)
        if where is None or scope is None:
            return
        names = detector.names
        if name in names.deleted:  # `del name` binds to astscope, not to libcst
            raise Undecided(f"`{name}` is deleted somewhere")
        if name in scope.declared or name in scope.nonlocals:
            raise Undecided(f"`{name}` is declared global or nonlocal")  # its imports differ
        if names.lookup(scope, f"{name}.{OLD_METHOD}") is not None:
            raise Undecided(f"`{name}.{OLD_METHOD}` is imported")  # libcst's access differs
        block, here = where
        lines = _ast_lines(block)
        bindings = [*scope.others.get(name, ())]
        bindings += [(s.lineno, s.col_offset) for s in scope.imports.get(name, ())]
        later = [i for at in bindings if (i := _ast_at(block, lines, at)) is not None and i > here]
        for use in names.loads.get(name, ()):
            attribute = detector.parent(use)
            if names.scope_of.get(use) is not scope or not (
                type(attribute) is ast.Attribute
                and attribute.value is use
                and attribute.attr == OLD_METHOD
            ):
                continue
            index = _ast_index(detector, lines, use)
            certain = index is not None and index > here and not any(i <= index for i in later)
            self._ast_found(detector, attribute, certain)


BEHAVIOUR = Fsdp125
