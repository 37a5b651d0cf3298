"""FSDP1's ``sharding_strategy`` and prefetching as FSDP2 keywords, for FSDP401.

A ``ShardingStrategy`` member (directly, bound once, chosen by a conditional or looked
up in a table) becomes ``reshard_after_forward``; ``backward_prefetch`` and
``forward_prefetch`` are dropped, with a note where they are not FSDP2's own behaviour.
"""

from __future__ import annotations

import re

from codemods.registry.names import TORCH_FSDP
from codemods.rules.api import Engine
from codemods.rules.fsdp401.helpers import helper_names
from codemods.rules.fsdp401.keywords import Keywords, Untranslatable
from codemods.rules.fsdp401.lookups import fresh
from codemods.rules.fsdp401.setup import GROUP
from codemods.rules.fsdp401.values import (
    PLAIN_VALUE,
    assignment_of,
    bound_once,
    enum_member,
    source,
)
from codemods.syntax.cst_nodes import find_all, literal
from codemods.syntax.lazy_libcst import cst


def _is_call(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Call)


#: Whether each ``ShardingStrategy`` member reshards after forward (FSDP2's
#: ``reshard_after_forward``); ``None`` is FSDP1's default, FULL_SHARD.
RESHARDS = {
    "FULL_SHARD": True,
    "SHARD_GRAD_OP": False,
    "HYBRID_SHARD": True,
    "_HYBRID_SHARD_ZERO2": False,
    "NO_SHARD": False,
}
#: The members FSDP2 shards as FSDP1 does over the same mesh (no mesh of their own).
PLAIN = ("FULL_SHARD", "SHARD_GRAD_OP")


def _member(engine: Engine, value: cst.BaseExpression) -> str:
    """The ``ShardingStrategy`` member ``value`` names.

    Raises:
        Untranslatable: Where it names none.
    """
    member = enum_member(engine, value, "ShardingStrategy")
    if member not in RESHARDS:
        raise Untranslatable("`sharding_strategy` is not a `ShardingStrategy` member")
    return member


def sharding(engine: Engine, value: cst.BaseExpression, out: Keywords) -> None:
    """Add ``reshard_after_forward`` for FSDP1's ``sharding_strategy=value`` to ``out``.

    Where the strategy may be one whose ranks FSDP2 gets only from a mesh (``NO_SHARD``,
    a hybrid one), ``out.strategy`` records it for the mesh (:func:`strategy_mesh`).

    Raises:
        Untranslatable: Where the value is not a strategy read here.
    """
    written = source(engine, value)  # what the call passes, still bound where it is
    bound = bound_once(engine, value)
    if bound is not None and enum_member(engine, bound, "ShardingStrategy") is not None:
        value = bound  # `strategy = ShardingStrategy.X`, once: a constant
    looked_up = _strategy_table(engine, value)
    if looked_up is None and bound is not None and not find_all(bound, _is_call):
        looked_up = _strategy_table(engine, bound)  # the table, bound once: re-read here
    if looked_up is not None:
        out.code.append(f"reshard_after_forward={looked_up[0]}")
        out.strategy = written if set(looked_up[1]) - set(PLAIN) else None
        out.runtime_members = frozenset(looked_up[1])
        return
    sides = (value.body, value.orelse) if isinstance(value, cst.IfExp) else ()
    if sides and all(enum_member(engine, side, "ShardingStrategy") for side in sides):
        # `FULL_SHARD if flag else SHARD_GRAD_OP`: the flag says whether to reshard.
        members = (_member(engine, value.body), _member(engine, value.orelse))
        body, orelse = RESHARDS[members[0]], RESHARDS[members[1]]
        test = source(engine, value.test)
        if body == orelse:
            out.code.append(f"reshard_after_forward={body}")
        else:
            out.code.append(f"reshard_after_forward={'' if body else 'not '}bool({test})")
        out.strategy = written if set(members) - set(PLAIN) else None
        out.runtime_members = frozenset(members)
        return
    member = enum_member(engine, value, "ShardingStrategy")
    # a literal is certainly no strategy; anything else may hold one at run time
    literals = (cst.BaseString, cst.BaseNumber, cst.List, cst.Tuple, cst.Set, cst.Dict)
    if member is None and isinstance(bound or value, literals):
        raise Untranslatable("`sharding_strategy` is not a `ShardingStrategy` member")
    if member is None:
        # Read from a config or computed: the same choice, made at run time.
        out.runtime_strategy = source(engine, value)
        out.runtime_members = _members_bound(engine, value)
        return
    out.code.append(f"reshard_after_forward={RESHARDS[_member(engine, value)]}")
    out.strategy = None if member in PLAIN else source(engine, value)
    out.runtime_members = frozenset([member])


def _members_bound(engine: Engine, value: cst.BaseExpression) -> frozenset[str] | None:
    """The ``ShardingStrategy`` members a name is bound to (``x = S.NO_SHARD``).

    None where one of its bindings is something else (a parameter, a config read).
    """
    scope = engine.scope(value) if isinstance(value, cst.Name) else None
    if scope is None:
        return None
    members = set()
    for assignment in scope[value.value]:
        statement = assignment_of(engine, getattr(assignment, "node", None))
        member = (
            None if statement is None else enum_member(engine, statement.value, "ShardingStrategy")
        )
        if member not in RESHARDS:
            return None
        members.add(member)
    return frozenset(members) or None


def runtime_strategy(engine: Engine, strategy: str, out: Keywords) -> None:
    """``reshard_after_forward`` for a strategy known only at run time, added to ``out``.

    Where the file binds it to FULL_SHARD or SHARD_GRAD_OP only, a table of the two;
    otherwise ``reshards_like_fsdp1(strategy)`` (a helper written once in the file),
    and ``out.strategy`` records it for its mesh (:func:`strategy_mesh`).
    """
    members = out.runtime_members
    if members is not None and members <= set(PLAIN):
        entries = ", ".join(f"ShardingStrategy.{key}: {RESHARDS[key]}" for key in sorted(members))
        out.code.append(f"reshard_after_forward={{{entries}}}[{strategy}]")
        out.more_imports.append((TORCH_FSDP, "ShardingStrategy"))
        return
    out.strategy = strategy


def _strategy_table(
    engine: Engine, value: cst.BaseExpression
) -> tuple[str, tuple[str, ...]] | None:
    """``{"fsdp": FULL_SHARD, "sdp": SHARD_GRAD_OP}[key]`` as ``{"fsdp": True, ...}[key]``.

    Real scripts pick the strategy from a table by a command-line flag; each entry
    becomes whether it reshards, and a key missing from the table fails the same way.
    None: not a table lookup.

    Returns:
        The table of flags, and the members the table holds.

    Raises:
        Untranslatable: Where an entry is not a ``ShardingStrategy`` member.
    """
    if not (isinstance(value, cst.Subscript) and isinstance(value.value, cst.Dict)):
        return None
    entries = value.value.elements
    if len(value.slice) != 1 or not isinstance(value.slice[0].slice, cst.Index):
        return None
    if not entries or not all(isinstance(entry, cst.DictElement) for entry in entries):
        return None
    code = engine.module.code_for_node
    members = tuple(_member(engine, entry.value) for entry in entries)
    table = ", ".join(f"{code(e.key)}: {RESHARDS[m]}" for e, m in zip(entries, members))
    return f"{{{table}}}[{code(value.slice[0].slice.value)}]", members


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


#: A plain name (read again without evaluating anything).
NAME = re.compile(r"[A-Za-z_]\w*")
RUNTIME = (
    "`sharding_strategy` is one of several strategies chosen at run time: "
    "`reshards_like_fsdp1` and "
    "`mesh_like_fsdp1` give each strategy's `reshard_after_forward` and ranks"
)
NO_SHARD = (
    "`NO_SHARD` becomes `fully_shard` on a `(ranks, 1)` mesh (`replicate`, `shard`) "
    "that `mesh_like_fsdp1` builds: each rank keeps the whole model and gradients are "
    "all-reduced as FSDP1's were, but parameters and `state_dict()` entries are DTensors "
    "(replicated), and FSDP1's deprecation warning is gone"
)
HYBRID = (
    "a hybrid strategy without a mesh shards within groups of `device_count()` "
    "consecutive ranks and replicates across them, as FSDP1 did (`mesh_like_fsdp1`); "
    "where a node has one device FSDP1 fell back to training each rank alone (`NO_SHARD` "
    "over one rank, gradients divided by the world size), the `(world_size, 1)` mesh "
    "replicates over every rank instead (gradients all-reduced)"
)
NAMED = (
    "a hybrid strategy's 2-D mesh without dimension names is rebuilt from its groups "
    "with the names (`replicate`, `shard`) FSDP2 needs"
)
PAIR = (
    "a hybrid strategy with FSDP1's (intra-node, inter-node) pair of groups shards on the "
    "2-D mesh they form (`DeviceMesh.from_group([inter, intra], ...)`, the grid of ranks "
    "gathered from every rank, `ValueError` where the groups form none)"
)


def strategy_mesh(engine: Engine, out: Keywords, root: str) -> None:
    """The ``mesh`` keyword for a strategy that needs one of its own (``out.strategy``).

    ``mesh_like_fsdp1(strategy, root, ...)``, a helper written once in the file, builds
    the ranks FSDP1's strategy shards and replicates on, given the call's
    ``device_id``, ``device_mesh`` and ``process_group``; the finding names what
    differs from FSDP1.
    """
    if out.strategy is None:
        return
    strategy = out.strategy
    several = out.runtime_members is None or len(out.runtime_members) > 1
    if not (NAME if several else PLAIN_VALUE).fullmatch(strategy):
        name = fresh(engine, "strategy")  # read once, as FSDP1 did, for both keywords
        out.bindings.append(f"{name} = {strategy}")
        strategy = name
    if several:  # one of several strategies: the helper answers each as FSDP1 does
        out.code = [text for text in out.code if not text.startswith("reshard_after_forward=")]
        reshards = helper_names(engine, ["reshards"])["reshards"]
        out.code.append(f"reshard_after_forward={reshards}({strategy})")
        out.notes.append(RUNTIME)
    args = [strategy, root]
    if out.setup.device is not None:
        args.append(f"device={out.setup.device}")
    meshes = [text for text in out.code if text.startswith("mesh=")]  # `device_mesh`
    for text in meshes:
        out.code.remove(text)
        args.append(text)
    if out.setup.group is not None:
        args.append(f"group={out.setup.group}")
    helper = helper_names(engine, ["mesh"])["mesh"]
    out.code.append(f"mesh={helper}({', '.join(args)})")
    members = out.runtime_members or frozenset(RESHARDS)  # None: any
    hybrid = bool(members & {"HYBRID_SHARD", "_HYBRID_SHARD_ZERO2"})
    if GROUP in out.notes:  # the group's ranks are in the mesh the helper builds
        out.notes.remove(GROUP)
    if "NO_SHARD" in members:
        out.notes.append(NO_SHARD)
    if hybrid and not meshes and out.setup.group is None:
        out.notes.append(HYBRID)
    if hybrid and meshes:
        out.notes.append(NAMED)
    if hybrid and out.setup.group is not None:
        out.notes.append(PAIR)
