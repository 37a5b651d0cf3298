"""How FSDP401 reads the values an FSDP1 wrapper call passes.

A name bound once, a member of one of torch's FSDP enums, a call of one of torch's FSDP1
classes (its fields by name), and a value's source: as written in the new code, as an
operand inside a new expression, and as a message quotes it.
"""

from __future__ import annotations

import re
from typing import Any

from codemods.registry.names import TORCH_FSDP
from codemods.rules.api import Engine
from codemods.rules.fsdp401.keywords import Untranslatable
from codemods.syntax.cst_nodes import keyword
from codemods.syntax.lazy_libcst import cst

_PREFIXES = (f"{TORCH_FSDP}.", "torch.distributed.fsdp.api.")

#: A value's source that is written as it is wherever it is needed again: a name, an
#: attribute chain or a constant (evaluating it twice changes nothing); anything else
#: is bound to a name first.
PLAIN_VALUE = re.compile(r"[A-Za-z_][\w.]*|-?\d+(\.\d*)?|'[^'\\]*'|\"[^\"\\]*\"")


def bound_once(engine: Engine, node: cst.BaseExpression) -> cst.BaseExpression | None:
    """The value of a name bound exactly once, by ``name = value`` (or ``name: T = value``)."""
    if not isinstance(node, cst.Name):
        return None
    scope = engine.scope(node)
    if scope is None:
        return None
    assignments = list(scope[node.value])
    if len(assignments) != 1:
        return None
    statement = assignment_of(engine, getattr(assignments[0], "node", None))
    return None if statement is None else statement.value


def is_none(node: cst.BaseExpression) -> bool:
    """Whether ``node`` is the name ``None``."""
    return isinstance(node, cst.Name) and node.value == "None"


def enum_member(engine: Engine, node: cst.BaseExpression, enum: str) -> str | None:
    """``X`` for a reference to torch's ``enum.X`` (``ShardingStrategy.FULL_SHARD``)."""
    for name in engine.qualified(node):
        head, _, member = name.rpartition(".")
        owner, _, cls = head.rpartition(".")
        if cls == enum and any(f"{owner}.".startswith(p) for p in _PREFIXES):
            return member
    return None


def constructor(engine: Engine, node: cst.BaseExpression, cls: str) -> cst.Call | None:
    """``node`` as a call of torch's FSDP1 class ``cls`` (directly or through a name bound once)."""
    return direct_constructor(engine, bound_once(engine, node) or node, cls)


def direct_constructor(engine: Engine, node: cst.BaseExpression, cls: str) -> cst.Call | None:
    """``node`` as a call of torch's FSDP1 class ``cls`` itself."""
    if not isinstance(node, cst.Call):
        return None
    names = engine.qualified(node.func)
    wanted = {f"{TORCH_FSDP}.{cls}", f"torch.distributed.fsdp.api.{cls}"}
    wanted.add(f"{TORCH_FSDP}.fully_sharded_data_parallel.{cls}")
    return node if names & wanted else None


def call_fields(call: cst.Call, order: tuple[str, ...]) -> dict[str, cst.BaseExpression]:
    """A constructor call's arguments by field name (positional ones by ``order``)."""
    out = {}
    for index, arg in enumerate(call.args):
        if arg.star:
            raise Untranslatable(f"`{order[0]}`... passed with `*`/`**`")
        name = keyword(arg) or (order[index] if index < len(order) else None)
        if name is None:
            raise Untranslatable("too many positional arguments")
        out[name] = arg.value
    return out


def source(engine: Engine, node: cst.BaseExpression) -> str:
    """Source of a value, as the keyword's value is written.

    It is evaluated once, as FSDP1 evaluates its arguments: FSDP401 binds a value that
    is more than a name or a constant to a name before its loop.
    """
    return engine.module.code_for_node(node)


def operand(engine: Engine, node: cst.BaseExpression) -> str:
    """Source of a value used inside a new expression, in parentheses unless atomic.

    Example: the flag ``a or b`` stays right in ``X if (a or b) else Y``.
    """
    atoms = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.SimpleString, cst.Integer)
    text = source(engine, node)
    return text if isinstance(node, atoms) or node.lpar else f"({text})"


#: The most of a node's source a message quotes.
SHOWN_LENGTH = 60


def shown(engine: Engine, node: cst.CSTNode) -> str:
    """``node``'s source as a message quotes it: on one line, cut at :data:`SHOWN_LENGTH`.

    A finding is one line of output (and one record of a report); real values span lines
    (a dict of dtypes looked up by a flag).
    """
    text = " ".join(engine.module.code_for_node(node).split())
    return text if len(text) <= SHOWN_LENGTH else f"{text[: SHOWN_LENGTH - 3]}..."


def assignment_of(engine: Engine, target: Any) -> cst.Assign | cst.AnnAssign | None:
    """The ``name = value`` (or ``name: T = value``) statement binding the ``Name`` ``target``."""
    parent = engine.parent(target) if isinstance(target, cst.Name) else None
    if isinstance(parent, cst.AnnAssign) and parent.target is target and parent.value is not None:
        return parent
    statement = engine.parent(parent) if isinstance(parent, cst.AssignTarget) else None
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        return statement
    return None
