"""A conversion's imports, beside FSDP1's class where a function imports it.

Code that imports FSDP1's class inside a function (``def build(model): from
torch.distributed.fsdp import FullyShardedDataParallel as FSDP``) keeps
``torch.distributed`` out of its module's import time: a library that runs without it,
a benchmark that imports it only when asked. The conversion's ``fully_shard`` (and
``MixedPrecisionPolicy``...) then goes in that function, just before the old import
(which goes where its names are no longer used), not at the top of the module, where it
would make every import of the module import FSDP2. lightning-thunder's benchmarks are
of that shape.
"""

from __future__ import annotations

from codemods.rules.api import Engine
from codemods.syntax.lazy_libcst import cst

#: The engine's scratch key: per import line, the names already written before it.
_WRITTEN = "fsdp401:local-imports"


class ConversionImports:
    """``need_import`` for one conversion: at the top of the module, or in the function.

    Args:
        engine: The file's engine.
        call: The original FSDP1 wrapper call.
    """

    def __init__(self, engine: Engine, call: cst.Call) -> None:
        self._engine = engine
        self._line = _local_import_line(engine, call.func)
        self._wanted: dict[str, list[str]] = {}

    def need_import(self, module: str, name: str) -> None:
        """Queue ``from module import name`` for this conversion's new code."""
        self._wanted.setdefault(module, []).append(name)

    def write(self) -> None:
        """Import what was queued: before the function's import of FSDP1's class, or at the top.

        At the top where FSDP1's class is the module's, or where the file's converted
        calls want helpers (:mod:`codemods.rules.fsdp401.helpers`): those are module-level
        functions that read the same names.
        """
        helpers = self._engine.scratch.get("FSDP401-helpers", {}).get("wanted")
        if self._line is None or helpers:
            for module, names in self._wanted.items():
                for name in names:
                    self._engine.need_import(module, name)
            return
        written = self._engine.scratch.setdefault(_WRITTEN, {}).setdefault(id(self._line), set())
        statements = []
        for module, names in sorted(self._wanted.items()):
            listed = []
            for name in names:
                spelled = self._engine.spelled_import(module, name, None)  # type: ignore[attr-defined]
                if spelled is None or spelled in written:
                    continue
                written.add(spelled)
                listed.append((name, spelled[2]))
            if listed:  # as the module's own import lines are written (imports/adding.py)
                text = ", ".join(n if a is None else f"{n} as {a}" for n, a in sorted(listed))
                config = self._engine.module.config_for_parsing
                statements.append(cst.parse_statement(f"from {module} import {text}", config))
        if statements:
            self._engine.insert_in_function(self._line, statements)


def _local_import_line(engine: Engine, func: cst.BaseExpression) -> cst.SimpleStatementLine | None:
    """The line of the function's own import that binds the call's callee; None elsewhere."""
    while isinstance(func, cst.Attribute):
        func = func.value
    scope = engine.scope(func) if isinstance(func, cst.Name) else None
    if scope is None:
        return None
    assignments = {id(a): a for access in scope.accesses[func] for a in access.referents}
    if len(assignments) != 1:
        return None
    (assignment,) = assignments.values()
    node = getattr(assignment, "node", None)
    if not isinstance(node, (cst.Import, cst.ImportFrom)):
        return None
    if type(assignment.scope).__name__ != "FunctionScope":
        return None  # the module's own import: the new ones go beside it, at the top
    line = engine.parent(node)
    return line if isinstance(line, cst.SimpleStatementLine) else None
