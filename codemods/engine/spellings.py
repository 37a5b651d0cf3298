"""Names the new code imports that the module already binds otherwise.

A fix that writes ``MixedPrecisionPolicy(...)`` asks for ``from torch.distributed.fsdp
import MixedPrecisionPolicy`` (:meth:`Engine.need_import`). A module may bind that name
already, through another import (verl's ``from verl.utils.fsdp_utils import
MixedPrecisionPolicy``, a re-export under a version gate) or an assignment. Importing it
again rebinds the module's name (pyflakes' F811), and whichever binding runs last decides
what both the old and the new code get. So:

- where every module-level binding of the name imports it from a home that holds the
  same object (FSDP2's public and composable homes), the new code reuses that binding
  and nothing is imported;
- where one imports it from another module of torch's, or from one a fix of the same
  pass moves to torch (fairscale's FSDP), the fix's import takes its place, as before;
- anywhere else (a project's module, an assignment), torch's object is imported under
  a name the module does not use (``MixedPrecisionPolicy_``), and the new code, only
  the new code, spells it so.

The engine notes, as each rewrite is put in place, the names of the new code that the
module binds at its top level (:meth:`Spellings.note_new`); at the end of the visit the
ones that were given another spelling are renamed (:meth:`Spellings.respell`).
"""

from __future__ import annotations

from typing import Any

from codemods.syntax.cst_dispatch import CachedDispatch
from codemods.syntax.lazy_libcst import cst

#: Packages whose modules' names are one object where two have the same name: FSDP's
#: public modules re-export the classes and functions of its private ones, and FSDP2's
#: composable home the public one's (torch 2.6 and later; 2.4 and 2.5 have only it).
SAME_OBJECTS = (("torch.distributed.fsdp", "torch.distributed._composable.fsdp"),)


def _same_object(home: str, other: str | None) -> bool:
    """Whether ``home``'s name and ``other``'s name of the same spelling are one object.

    Example:
        >>> _same_object("torch.distributed.fsdp", "torch.distributed.fsdp.api")
        True
        >>> _same_object("torch.distributed.fsdp", "torch.distributed._composable")
        False
    """
    if other == home:
        return True
    if other is None:
        return False
    return any(
        all(any(m == p or m.startswith(p + ".") for p in family) for m in (home, other))
        for family in SAME_OBJECTS
    )


def _torch(module: str) -> bool:
    return module == "torch" or module.startswith("torch.")


def top_bindings(module: cst.Module) -> dict[str, list[str | None]]:
    r"""Each name the module binds at its top level, with where each binding imports it from.

    ``None`` for a binding that is not an import of that name (an assignment, a
    definition, ``import a.b``, an alias of another name). Statements under a top-level
    ``if``/``try``/``with`` count (a version gate's imports); function and class bodies
    do not.

    Example:
        >>> source = "from a import X\nif t:\n    from b import X\nelse:\n    X = None\n"
        >>> top_bindings(cst.parse_module(source))
        {'X': ['a', 'b', None]}
    """
    found: dict[str, list[str | None]] = {}
    for statement in _top_statements(module.body):
        for small in getattr(statement, "body", ()) if _simple(statement) else ():
            _note_small(small, found)
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            found.setdefault(statement.name.value, []).append(None)
    return found


def _simple(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine)


def _top_statements(body: Any) -> list[cst.CSTNode]:
    """The module's statements, with those of top-level ``if``/``try``/``with`` blocks."""
    found: list[cst.CSTNode] = []
    for statement in body:
        found.append(statement)
        if isinstance(statement, (cst.If, cst.Try, cst.With, cst.For, cst.While)):
            blocks = [statement.body, getattr(statement, "orelse", None)]
            blocks += [h.body for h in getattr(statement, "handlers", ())]
            blocks.append(getattr(statement, "finalbody", None))
            for block in blocks:
                while isinstance(block, (cst.If, cst.Else, cst.Finally)):
                    if isinstance(block, cst.If):  # an `elif`: its test's block, then on
                        found += _top_statements(block.body.body)
                        block = block.orelse
                    else:
                        block = block.body
                if isinstance(block, cst.IndentedBlock):
                    found += _top_statements(block.body)
    return found


def _note_small(small: cst.CSTNode, found: dict[str, list[str | None]]) -> None:
    if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
        home = None if small.relative or small.module is None else _dotted(small.module)
        for alias in small.names:
            name = _dotted(alias.name)
            bound = alias.evaluated_alias or name
            found.setdefault(bound, []).append(home if bound == name else None)
    elif isinstance(small, cst.Import):
        for alias in small.names:
            bound = alias.evaluated_alias or _dotted(alias.name).split(".")[0]
            found.setdefault(bound, []).append(None)
    elif isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else []
        targets += [small.target] if not isinstance(small, cst.Assign) else []
        for target in targets:
            for name in _target_names(target):
                found.setdefault(name, []).append(None)


def _target_names(target: cst.CSTNode) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in _target_names(element.value)]
    return []


def _dotted(node: cst.CSTNode) -> str:
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return node.value if isinstance(node, cst.Name) else ""


class _Respell(CachedDispatch):
    """Renames the noted Name nodes (by identity), leaving imports and attributes alone."""

    def __init__(self, noted: dict[int, cst.Name], spelled: dict[str, str]) -> None:
        super().__init__()
        self._noted, self._spelled = noted, spelled

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        if self._noted.get(id(original_node)) is not original_node:
            return updated_node
        new = self._spelled.get(original_node.value)
        return updated_node if new is None else updated_node.with_changes(value=new)


class Spellings:
    """The :class:`codemods.engine.transformer.Engine`'s share: spell new names apart.

    Expects ``self.module`` (the visited module) and ``self.edits``.
    """

    module: cst.Module

    def _spelling_state(self) -> dict[str, Any]:
        state = getattr(self, "_spellings", None)
        if state is None or state["module"] is not self.module:
            state = {"module": self.module, "top": None, "names": None, "spelled": {}}
            state["noted"] = {}
            self._spellings = state
        return state

    def _top(self) -> dict[str, list[str | None]]:
        state = self._spelling_state()
        if state["top"] is None:
            state["top"] = top_bindings(self.module)
        return state["top"]

    def spelling(self, home: str, name: str) -> str | None:
        """How new code spells ``home``'s ``name`` here; None: a binding here is that object.

        Where the module binds ``name`` otherwise, torch's object gets a fresh name (the
        same one for every fix of the file).
        """
        bindings = self._top().get(name)
        if not bindings:
            return name
        if all(_same_object(home, other) for other in bindings):
            return None if any(other != home for other in bindings) else name
        renamed = getattr(self, "renames", {})
        if any(other and (_torch(other) or f"{other}.{name}" in renamed) for other in bindings):
            # torch's own name, or one a fix of this pass moves (fairscale's FSDP to
            # torch's): the fix's import takes its place
            return name
        state = self._spelling_state()
        if name not in state["spelled"]:
            state["spelled"][name] = self._fresh(name)
        return state["spelled"][name]

    def spelled_import(
        self, home: str, name: str | None, asname: str | None
    ) -> tuple[str, str | None, str | None] | None:
        """The import to queue for ``from home import name`` (None: the module has it)."""
        if name is None or asname is not None:
            return (home, name, asname)
        spelled = self.spelling(home, name)
        if spelled is None:
            return None
        return (home, name, None if spelled == name else spelled)

    def _fresh(self, name: str) -> str:
        state = self._spelling_state()
        if state["names"] is None:
            found: set[str] = set()
            _collect_names(self.module, found)
            state["names"] = found
        taken = state["names"] | set(state["spelled"].values())
        while name in taken:
            name += "_"
        return name

    def note_new(self, result: Any, kept: Any) -> Any:
        """Note the names of ``result`` outside ``kept`` (the old code it holds) bound here.

        Returns ``result``.
        """
        if result is kept or not self._top():
            return result
        top = self._top()
        found: list[cst.Name] = []
        for node in result.nodes if isinstance(result, cst.FlattenSentinel) else [result]:
            if isinstance(node, cst.CSTNode):
                _new_names(node, set(top), found)
        if found:
            old: set[int] = set()
            if isinstance(kept, cst.CSTNode):
                _collect_ids(kept, old)
            noted = self._spelling_state()["noted"]
            noted.update((id(name), name) for name in found if id(name) not in old)
        return result

    def respell(self, module: cst.Module) -> cst.Module:
        """``module`` with the noted new names spelled as :meth:`spelling` chose."""
        state = getattr(self, "_spellings", None)
        if not state or not state["spelled"] or not state["noted"]:
            return module
        return module.visit(_Respell(state["noted"], state["spelled"]))


def _new_names(node: cst.CSTNode, bound: set[str], found: list[cst.Name]) -> None:
    """The ``Name`` nodes under ``node`` that spell a name in ``bound``.

    Imports, attribute names and keywords are left out.
    """
    if isinstance(node, (cst.Import, cst.ImportFrom)):
        return
    if isinstance(node, cst.Name):
        if node.value in bound:
            found.append(node)
        return
    for child in node.children:
        if isinstance(node, cst.Attribute) and child is node.attr:
            continue
        if isinstance(node, cst.Arg) and child is node.keyword:
            continue
        _new_names(child, bound, found)


def _collect_ids(node: cst.CSTNode, found: set[int]) -> None:
    found.add(id(node))
    for child in node.children:
        _collect_ids(child, found)


def _collect_names(node: cst.CSTNode, found: set[str]) -> None:
    if isinstance(node, cst.Name):
        found.add(node.value)
    for child in node.children:
        _collect_names(child, found)
