"""Checks for FSDP1's class that a file already pairs with a check for FSDP2's.

Code that has met FSDP2 tells the two apart in one chain (``if isinstance(m, FSDP):
... elif isinstance(m, FSDPModule): ...``). A converted model is an ``FSDPModule``, so it
takes the branch the file's authors wrote for FSDP2 models: the FSDP1 check is left as
it is and stands in no way. A check with no such partner would send FSDP2 models down
another branch, and keeps such a file FSDP1.
"""

from __future__ import annotations

from codemods.rules.api import Engine
from codemods.rules.fsdp401.companion import branch_of
from codemods.rules.fsdp401.lookups import ISINSTANCE
from codemods.syntax.cst_nodes import find_all
from codemods.syntax.lazy_libcst import cst

#: FSDP2's class, spelled so in each home and in projects that re-export it.
FSDP2_CLASS = "FSDPModule"


def _names_fsdp2(engine: Engine, node: cst.BaseExpression) -> bool:
    """Whether ``node`` is FSDP2's class: torch's, or a project's re-export of it."""
    names = engine.qualified(node) or {engine.module.code_for_node(node)}
    return any(name.rpartition(".")[2] == FSDP2_CLASS for name in names)


def _chain(engine: Engine, branch: cst.If) -> list[cst.If]:
    """Every ``if`` of the ``if``/``elif`` chain ``branch`` is part of."""
    first = branch
    while True:
        parent = engine.parent(first)
        if not (isinstance(parent, cst.If) and parent.orelse is first):
            break
        first = parent
    chain = [first]
    while isinstance(chain[-1].orelse, cst.If):
        chain.append(chain[-1].orelse)
    return chain


def _tests_fsdp2(engine: Engine, test: cst.BaseExpression, subject: str) -> bool:
    """Whether ``test`` holds ``isinstance(subject, FSDPModule)`` (FSDP2's class)."""
    code = engine.module.code_for_node
    for call in find_all(test, lambda n: isinstance(n, cst.Call)):
        if len(call.args) != 2 or ISINSTANCE not in engine.qualified(call.func):
            continue
        if code(call.args[0].value) != subject:
            continue
        kinds = call.args[1].value
        parts = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]
        if any(_names_fsdp2(engine, part) for part in parts):
            return True
    return False


def paired_with_fsdp2(engine: Engine, check: cst.CSTNode) -> bool:
    """Whether the ``isinstance(x, FSDP)`` ``check`` is in a chain that tests FSDP2's class.

    The chain must test the same ``x``; an ``FSDPModule`` test anywhere in it will do
    (before the FSDP1 one or after it: a converted model is never an FSDP1 one).
    """
    found = branch_of(engine, check)
    if found is None:
        return False
    subject, branch = found
    return any(_tests_fsdp2(engine, link.test, subject) for link in _chain(engine, branch))
