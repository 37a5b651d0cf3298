"""FSDP1's ``sharding_strategy`` and prefetching as FSDP2 keywords, for FSDP401.

A ``ShardingStrategy`` member (directly, bound once, chosen by a conditional or looked
up in a table) becomes ``reshard_after_forward``; ``backward_prefetch`` and
``forward_prefetch`` are dropped, with a note where they are not FSDP2's own behaviour.
"""

from __future__ import annotations

from codemods.registry.names import TORCH_FSDP
from codemods.rules.api import Engine
from codemods.rules.fsdp401.keywords import Keywords, Untranslatable
from codemods.rules.fsdp401.recipes import RECIPES
from codemods.rules.fsdp401.values import assignment_of, bound_once, enum_member, source
from codemods.syntax.cst_nodes import find_all, literal
from codemods.syntax.lazy_libcst import cst


def _is_call(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Call)


def _reshards(engine: Engine, value: cst.BaseExpression) -> bool:
    """Whether a ``ShardingStrategy`` member reshards after forward (FULL_SHARD)."""
    member = enum_member(engine, value, "ShardingStrategy")
    if member in ("FULL_SHARD", "SHARD_GRAD_OP"):
        return member == "FULL_SHARD"
    if member in ("HYBRID_SHARD", "_HYBRID_SHARD_ZERO2"):
        raise Untranslatable(f"`{member}`: {RECIPES['HYBRID_SHARD']}")
    if member == "NO_SHARD":
        raise Untranslatable(RECIPES["NO_SHARD"])
    raise Untranslatable("`sharding_strategy` is not a `ShardingStrategy` member")


def sharding(engine: Engine, value: cst.BaseExpression, out: Keywords) -> None:
    """Add ``reshard_after_forward`` for FSDP1's ``sharding_strategy=value`` to ``out``.

    Raises:
        Untranslatable: Where a strategy has no FSDP2 twin, or is not read here.
    """
    bound = bound_once(engine, value)
    if bound is not None and enum_member(engine, bound, "ShardingStrategy") is not None:
        value = bound  # `strategy = ShardingStrategy.X`, once: a constant
    looked_up = _strategy_table(engine, value)
    if looked_up is None and bound is not None and not find_all(bound, _is_call):
        looked_up = _strategy_table(engine, bound)  # the table, bound once: re-read here
    if looked_up is not None:
        out.code.append(f"reshard_after_forward={looked_up}")
        return
    if isinstance(value, cst.IfExp):
        # `FULL_SHARD if flag else SHARD_GRAD_OP`: the flag says whether to reshard.
        body, orelse = _reshards(engine, value.body), _reshards(engine, value.orelse)
        test = source(engine, value.test)
        if body == orelse:
            out.code.append(f"reshard_after_forward={body}")
        else:
            out.code.append(f"reshard_after_forward={'' if body else 'not '}bool({test})")
        return
    if enum_member(engine, value, "ShardingStrategy") is None and not isinstance(
        bound or value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)
    ):
        raise Untranslatable("`sharding_strategy` is not a `ShardingStrategy` member")
    if enum_member(engine, value, "ShardingStrategy") is None:
        # Read from a config or computed: the same choice, made at run time, unless a
        # binding of the name in the file is a strategy FSDP2 has no twin for.
        out.runtime_strategy = source(engine, value)
        out.runtime_members = _members_bound(engine, value)
        return
    out.code.append(f"reshard_after_forward={_reshards(engine, value)}")


def _members_bound(engine: Engine, value: cst.BaseExpression) -> frozenset[str]:
    """The ``ShardingStrategy`` members a name is bound to in its scope (``x = S.NO_SHARD``)."""
    scope = engine.scope(value) if isinstance(value, cst.Name) else None
    if scope is None:
        return frozenset()
    members = set()
    for assignment in scope[value.value]:
        statement = assignment_of(engine, getattr(assignment, "node", None))
        if statement is not None:
            members.add(enum_member(engine, statement.value, "ShardingStrategy"))
    return frozenset(members - {None})


def runtime_strategy(strategy: str, meshed: bool, out: Keywords) -> str | None:
    """``reshard_after_forward`` for a strategy known only at run time, added to ``out``.

    Each strategy with an FSDP2 twin maps to whether it reshards; with a ``device_mesh``
    the hybrid ones too (FSDP2 shards hybrid on a 2-D mesh, as FSDP1 does on it). Any
    other raises ``KeyError`` naming it where FSDP1 would have run it otherwise.

    Returns:
        Why the call stays FSDP1 instead, where the file binds the name to a strategy
        the table lacks (the code would fail on that path), or None.
    """
    table = {"None": True, "FULL_SHARD": True, "SHARD_GRAD_OP": False}
    if meshed:
        table.update(HYBRID_SHARD=True, _HYBRID_SHARD_ZERO2=False)
    missing = sorted(out.runtime_members - set(table))
    if missing:
        recipe = RECIPES["NO_SHARD" if "NO_SHARD" in missing else "HYBRID_SHARD"]
        return f"`sharding_strategy` may be `{missing[0]}` (bound at run time): {recipe}"
    entries = ", ".join(
        f"{key if key == 'None' else 'ShardingStrategy.' + key}: {value}"
        for key, value in table.items()
    )
    out.code.append(f"reshard_after_forward={{{entries}}}[{strategy}]")
    out.more_imports.append((TORCH_FSDP, "ShardingStrategy"))
    # A mesh argument can be None at run time (a config without hybrid sharding): FSDP1
    # then builds its own node-local groups, FSDP2 shards over every rank.
    hybrid = (
        "`HYBRID_SHARD` and `_HYBRID_SHARD_ZERO2` on the mesh (where the mesh passed is "
        "None at run time, FSDP1 shards within each node and replicates across nodes, "
        "FSDP2 shards over every rank), "
        if meshed
        else ""
    )
    out.notes.append(
        f"`sharding_strategy` is chosen at run time: `FULL_SHARD`, `SHARD_GRAD_OP`, {hybrid}"
        "each become `reshard_after_forward`; any other strategy raises `KeyError` "
        "(FSDP2 has no twin for it)"
    )
    return None


def _strategy_table(engine: Engine, value: cst.BaseExpression) -> str | None:
    """``{"fsdp": FULL_SHARD, "sdp": SHARD_GRAD_OP}[key]`` as ``{"fsdp": True, ...}[key]``.

    Real scripts pick the strategy from a table by a command-line flag; each entry
    becomes whether it reshards, and a key missing from the table fails the same way.
    None: not a table lookup.

    Raises:
        Untranslatable: Where an entry has no FSDP2 twin (``HYBRID_SHARD``, ``NO_SHARD``).
    """
    if not (isinstance(value, cst.Subscript) and isinstance(value.value, cst.Dict)):
        return None
    entries = value.value.elements
    if len(value.slice) != 1 or not isinstance(value.slice[0].slice, cst.Index):
        return None
    if not entries or not all(isinstance(entry, cst.DictElement) for entry in entries):
        return None
    code = engine.module.code_for_node
    table = ", ".join(f"{code(e.key)}: {_reshards(engine, e.value)}" for e in entries)
    return f"{{{table}}}[{code(value.slice[0].slice.value)}]"


def prefetch(engine: Engine, name: str, value: cst.BaseExpression, out: Keywords) -> None:
    """Drop FSDP1's prefetch ``name=value``; note it in ``out`` where that changes something."""
    if name == "forward_prefetch":
        if literal(value) is not False:
            out.notes.append(
                "`forward_prefetch` dropped: prefetch explicitly with "
                "`set_modules_to_forward_prefetch`"
            )
        return
    if enum_member(engine, value, "BackwardPrefetch") != "BACKWARD_PRE":
        out.notes.append(
            "`backward_prefetch` dropped: FSDP2 prefetches one unit ahead in backward "
            "(`set_modules_to_backward_prefetch` sets it explicitly)"
        )
