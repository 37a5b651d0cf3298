r"""A hook renamed on a base class: ``configure_sharded_model`` in a ``LightningModule``.

The hook is found in classes that derive from one of the classes the rule names,
directly or through classes of the same file (``class Base(LightningModule)`` then
``class Model(Base)``) or of other files of the run (``from .base import BaseModule``:
:attr:`codemods.settings.Settings.lightning_bases`), and in subclasses of well-known test
bases that are ``LightningModule``\\ s themselves (``BoringModel``).
"""

from __future__ import annotations

import ast

from codemods.rules.api import Behaviour, Detector, Engine
from codemods.syntax.cst_nodes import dotted
from codemods.syntax.lazy_libcst import cst

#: Lightning's test helpers that are LightningModules (their names in every release).
KNOWN_SUBCLASSES = ("BoringModel", "DemoModel", "BoringFabricModule")


class MethodRename(Behaviour):
    """Rename the hook method in subclasses of the rule's owner classes."""

    classes = True

    def __init__(self, rule) -> None:
        super().__init__(rule)
        self.owners = {old.rpartition(".")[0] for old in rule.old}
        self.old_name = rule.old[0].rpartition(".")[2]
        self.new_name = rule.new.rpartition(".")[2]

    def _derives(self, engine: Engine, node: cst.ClassDef) -> bool:
        local = engine.scratch.setdefault(self.rule.code, set())  # the file's subclasses
        for base in node.bases:
            names = engine.qualified(base.value)
            leaves = {name.rpartition(".")[2] for name in names}
            if names & self.owners or leaves & set(KNOWN_SUBCLASSES):
                return True
            if isinstance(base.value, cst.Name) and base.value.value in local:
                return True
            if dotted(base.value) in engine.settings.lightning_bases:
                return True  # the project's own subclass, defined in another file of the run
        return False

    def _called(self, engine: Engine) -> bool:
        """Whether the module reaches the old hook by name: ``x.old``, or a string.

        A string is ``is_overridden("old", model)`` or ``getattr(m, "old")``: the rename
        would leave it asking about a hook no class defines any more.
        """
        key = f"{self.rule.code}:called"
        if key not in engine.scratch:
            attributes = engine.nodes(cst.Attribute)
            strings = engine.nodes(cst.SimpleString)
            engine.scratch[key] = any(n.attr.value == self.old_name for n in attributes) or any(
                n.evaluated_value == self.old_name for n in strings
            )
        return engine.scratch[key]

    def why_not(self) -> str:
        """Why a hook the module also reaches by name is left to a human."""
        return (
            f"the module also reaches `{self.old_name}` by name (`x.{self.old_name}`, or a "
            f'string such as `is_overridden("{self.old_name}", ...)`): rename those with it'
        )

    def ast_class_def(self, detector: Detector, node: ast.ClassDef) -> None:
        from codemods.syntax.ast_nodes import dotted as ast_dotted
        from codemods.syntax.ast_nodes import value

        local = detector.scratch.setdefault(self.rule.code, set())
        derives = False
        for base in node.bases:
            names = detector.qualified(value(base))
            leaves = {name.rpartition(".")[2] for name in names}
            derives = derives or bool(names & self.owners or leaves & set(KNOWN_SUBCLASSES))
            derives = derives or (type(base) is ast.Name and base.id in local)
            derives = derives or ast_dotted(base) in detector.settings.lightning_bases
            if derives:
                break
        if not derives:
            return
        local.add(node.name)
        functions = (ast.FunctionDef, ast.AsyncFunctionDef)
        defined = {s.name for s in node.body if isinstance(s, (*functions, ast.ClassDef))}
        called = self._ast_called(detector)
        for statement in node.body:
            if isinstance(statement, functions) and statement.name == self.old_name:
                fix = self.new_name not in defined and not called
                why = self.why_not() if called else None
                detector.report(statement, self.rule, fixable_here=fix, why_not=why)

    def _ast_called(self, detector: Detector) -> bool:
        """:meth:`_called` on ``ast``: ``x.old`` anywhere, import paths included."""
        key = f"{self.rule.code}:called"
        if key not in detector.scratch:
            old = self.old_name
            uses = [node for node in detector.nodes(ast.Attribute) if node.attr == old]
            uses += [node for node in detector.nodes(ast.Constant) if node.value == old]
            for node in detector.nodes(ast.ImportFrom, ast.Import):
                module = getattr(node, "module", None) or ""
                if old in module.split(".")[1:] or any(
                    old in a.name.split(".")[1:] for a in node.names
                ):
                    uses.append(node)
            detector.depends_on(uses)
            detector.scratch[key] = bool(uses)
        return detector.scratch[key]

    def class_def(
        self, engine: Engine, original: cst.ClassDef, updated: cst.ClassDef
    ) -> cst.ClassDef:
        if not self._derives(engine, original):
            return updated
        engine.scratch[self.rule.code].add(original.name.value)
        body = list(updated.body.body)
        defined = {getattr(s, "name", None) and s.name.value for s in body}
        called = self._called(engine)
        for index, (orig, stmt) in enumerate(zip(original.body.body, body)):
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == self.old_name:
                # Both defined: Lightning raises. The old hook called by name
                # (`self.configure_sharded_model()`) would reach Lightning's own no-op
                # after the rename. Either way a human decides.
                fix = self.new_name not in defined and not called
                why = self.why_not() if called else None
                if engine.report(orig, self.rule, fixable_here=fix, why_not=why) and fix:
                    body[index] = stmt.with_changes(name=cst.Name(self.new_name))
        return updated.with_changes(body=updated.body.with_changes(body=body))
