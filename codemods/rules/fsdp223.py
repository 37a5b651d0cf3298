"""FSDP223: ``trainer.amp_backend``, the Trainer attribute Lightning 2.0 removed.

An attribute read names no class, so the rule looks at the receiver: it is reported
where the receiver is visibly Lightning's Trainer, and nowhere else (``args.amp_backend``
is a configuration's):

- ``<anything>.trainer`` (``self.trainer`` in a LightningModule or a callback,
  ``pl_module.trainer`` in a callback's hook);
- a name every binding of which in the file is a Trainer: a parameter annotated with
  Lightning's ``Trainer``, or ``name = Trainer(...)``. One other binding of the name
  anywhere in the file (a loop variable, another value) and the read is left alone.

A write (``trainer.amp_backend = ...``) sets a plain attribute on 2.x and fails nothing.
The file is read once, at its first class, function or ``Trainer(...)`` call; both
halves find the same reads. Nothing is fixed: Lightning 2 has no AMP backend to read.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from codemods.registry.lightning_removed_rules import TRAINER
from codemods.rules.api import Behaviour, Detector, Engine
from codemods.syntax.gates import ast_fallback_regions, fallback_regions, inside_fallback
from codemods.syntax.lazy_libcst import cst

ATTRIBUTE = "amp_backend"


def _trainers(bindings: Iterator[tuple[str, bool]]) -> set[str]:
    """The names every binding of which binds a Trainer."""
    verdicts: dict[str, bool] = {}
    for name, is_trainer in bindings:
        verdicts[name] = verdicts.get(name, True) and is_trainer
    return {name for name, ok in verdicts.items() if ok}


class Fsdp223(Behaviour):
    """Report ``.amp_backend`` read on a visible Trainer; nothing is fixed."""

    definitions = True
    classes = True

    def calls(self) -> tuple[str, ...]:
        return TRAINER

    # libcst ----------------------------------------------------------------------

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        self._scan(engine)
        return updated

    def function(self, engine: Engine, node: cst.FunctionDef | cst.Lambda) -> None:
        self._scan(engine)

    def class_def(
        self, engine: Engine, original: cst.ClassDef, updated: cst.ClassDef
    ) -> cst.ClassDef:
        self._scan(engine)
        return updated

    def _scan(self, engine: Engine) -> None:
        if engine.scratch.setdefault(self.rule.code, False):
            return
        engine.scratch[self.rule.code] = True
        trainers: set[str] | None = None  # read only where the attribute is: most files lack it
        for node in engine.nodes(cst.Attribute):
            if node.attr.value != ATTRIBUTE or _cst_written(engine, node):
                continue
            if trainers is None:
                trainers = _trainers(_cst_bindings(engine))
            receiver = node.value
            visible = (
                isinstance(receiver, cst.Attribute) and receiver.attr.value == "trainer"
            ) or (isinstance(receiver, cst.Name) and receiver.value in trainers)
            if visible and not inside_fallback(node, engine.parent, fallback_regions):
                engine.report(node, self.rule, fixable_here=False)

    # ast -------------------------------------------------------------------------

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        self._ast_scan(detector)

    def ast_function(self, detector: Detector, node: ast.AST) -> None:
        self._ast_scan(detector)

    def ast_class_def(self, detector: Detector, node: ast.ClassDef) -> None:
        self._ast_scan(detector)

    def _ast_scan(self, detector: Detector) -> None:
        if detector.scratch.setdefault(self.rule.code, False):
            return
        detector.scratch[self.rule.code] = True
        trainers: set[str] | None = None  # as the libcst half: only where the attribute is
        regions = lambda n: ast_fallback_regions(n, detector.segment)  # noqa: E731
        for node in detector.nodes(ast.Attribute):
            if node.attr != ATTRIBUTE or type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]
                continue
            if trainers is None:
                trainers = _trainers(_ast_bindings(detector))
            receiver = node.value  # type: ignore[attr-defined]
            visible = (type(receiver) is ast.Attribute and receiver.attr == "trainer") or (
                type(receiver) is ast.Name and receiver.id in trainers
            )
            if visible and not inside_fallback(node, detector.parent, regions):
                detector.report(node, self.rule, fixable_here=False)


def _cst_written(engine: Engine, node: cst.Attribute) -> bool:
    """Whether ``node`` is assigned to, augmented or deleted rather than read."""
    parent = engine.parent(node)
    if isinstance(parent, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)):
        return parent.target is node
    return isinstance(parent, cst.Del)


def _cst_is_trainer_call(engine: Engine, value: cst.BaseExpression | None) -> bool:
    return isinstance(value, cst.Call) and bool(engine.qualified(value.func) & set(TRAINER))


def _cst_names(node: cst.CSTNode | None) -> Iterator[str]:
    """The names a binding target binds (``a, (b, *c)`` binds three)."""
    if isinstance(node, cst.Name):
        yield node.value
    elif isinstance(node, (cst.Tuple, cst.List)):
        for element in node.elements:
            yield from _cst_names(element.value)
    elif isinstance(node, cst.StarredElement):
        yield from _cst_names(node.value)


def _cst_bindings(engine: Engine) -> Iterator[tuple[str, bool]]:
    """Each binding of a name in the file, and whether it binds a Trainer."""
    trainer = set(TRAINER)
    for param in engine.nodes(cst.Param):
        annotation = param.annotation.annotation if param.annotation else None
        yield param.name.value, bool(annotation and engine.qualified(annotation) & trainer)
    for assign in engine.nodes(cst.Assign):
        single = len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name)
        for target in assign.targets:
            for name in _cst_names(target.target):
                yield name, single and _cst_is_trainer_call(engine, assign.value)
    for annotated in engine.nodes(cst.AnnAssign):
        for name in _cst_names(annotated.target):
            typed = engine.qualified(annotated.annotation.annotation) & trainer
            yield name, bool(typed) or _cst_is_trainer_call(engine, annotated.value)
    others: list[cst.CSTNode | None] = []
    others += [n.target for n in engine.nodes(cst.For)]
    others += [n.target for n in engine.nodes(cst.CompFor)]
    others += [n.target for n in engine.nodes(cst.AugAssign)]
    others += [n.target for n in engine.nodes(cst.NamedExpr)]
    others += [n.asname.name for n in engine.nodes(cst.WithItem) if n.asname]
    others += [n.name.name for n in engine.nodes(cst.ExceptHandler) if n.name]
    others += [n.name for n in engine.nodes(cst.FunctionDef)]
    others += [n.name for n in engine.nodes(cst.ClassDef)]
    for target in others:
        for name in _cst_names(target):
            yield name, False
    for alias in engine.nodes(cst.ImportAlias):
        bound = alias.evaluated_alias or alias.evaluated_name.partition(".")[0]
        yield bound, False


def _ast_bindings(detector: Detector) -> Iterator[tuple[str, bool]]:
    """:func:`_cst_bindings` on ``ast``."""
    trainer = set(TRAINER)

    def is_trainer_call(value: ast.AST | None) -> bool:
        return type(value) is ast.Call and bool(detector.qualified(value.func) & trainer)  # type: ignore[attr-defined]

    for arg in detector.nodes(ast.arg):
        annotation = arg.annotation  # type: ignore[attr-defined]
        yield arg.arg, bool(annotation and detector.qualified(annotation) & trainer)  # type: ignore[attr-defined]
    covered: set[int] = set()
    for assign in detector.nodes(ast.Assign):
        targets = assign.targets  # type: ignore[attr-defined]
        single = len(targets) == 1 and type(targets[0]) is ast.Name
        for target in targets:  # most are a name: no walk (ast.walk would yield it and its ctx)
            for name in (target,) if type(target) is ast.Name else ast.walk(target):
                if type(name) is ast.Name and type(name.ctx) is ast.Store:  # type: ignore[attr-defined]
                    covered.add(id(name))
                    yield name.id, single and is_trainer_call(assign.value)  # type: ignore[attr-defined]
    for annotated in detector.nodes(ast.AnnAssign):
        target = annotated.target  # type: ignore[attr-defined]
        if type(target) is ast.Name:
            covered.add(id(target))
            typed = detector.qualified(annotated.annotation) & trainer  # type: ignore[attr-defined]
            yield target.id, bool(typed) or is_trainer_call(annotated.value)  # type: ignore[attr-defined]
    for name in detector.nodes(ast.Name):
        if type(name.ctx) is ast.Store and id(name) not in covered:  # type: ignore[attr-defined]
            yield name.id, False  # type: ignore[attr-defined]
    for handler in detector.nodes(ast.ExceptHandler):
        if handler.name:  # type: ignore[attr-defined]
            yield handler.name, False  # type: ignore[attr-defined]
    for definition in detector.nodes(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
        yield definition.name, False  # type: ignore[attr-defined]
    for statement in detector.nodes(ast.Import, ast.ImportFrom):
        for alias in statement.names:  # type: ignore[attr-defined]
            yield alias.asname or alias.name.partition(".")[0], False


BEHAVIOUR = Fsdp223
