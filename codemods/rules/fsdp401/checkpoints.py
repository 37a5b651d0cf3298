"""FSDP1's checkpoint calls on a converted model, as FSDP2 code, for FSDP401.

FSDP1's class calls that pick a state-dict layout do nothing useful on an FSDP2 model
(``FSDP.state_dict_type`` raises ``KeyError`` as it exits, ``FSDP.optim_state_dict``
finds no FSDP1 unit). Where the form is certain they become what FSDP2 ports write
(``FSDP2-PORTS.md`` rows 15, 16 and 18); the forms also run on plain modules, so a
file that converts may pass any module to them:

- a ``FULL_STATE_DICT`` block FSDP115 rewrites (one ``model.state_dict()`` or
  ``model.load_state_dict(state)``) becomes that same rewrite, ``get_model_state_dict``
  / ``set_model_state_dict`` with ``StateDictOptions(full_state_dict=True[,
  cpu_offload=True])`` (:func:`codemods.rules.fsdp115.adopt`);
- a ``SHARDED_STATE_DICT`` block (no config, or ``ShardedStateDictConfig()``) loses its
  ``with``: FSDP2's own ``state_dict()`` and ``load_state_dict()`` are sharded (DTensors
  where FSDP1 gave ShardedTensors);
- ``FSDP.optim_state_dict(model, optim)`` outside any block (FSDP1's default layout,
  full on every rank) becomes ``get_optimizer_state_dict(model, optim,
  options=StateDictOptions(full_state_dict=True))``: the same FQN-keyed state; in such a
  sharded block, ``get_optimizer_state_dict(model, optim)`` (sharded, FQN-keyed).
- a ``FULL_STATE_DICT`` block whose first statement FSDP115 would rewrite, and whose
  other statements do not name the model, becomes that statement followed by the others;
  in the dual stack where DCP's functions do not run on FSDP1 (before torch 2.2, loading
  2.4), ``if HAS_FSDP2:`` that form ``else:`` the block as written; those statements
  may read ``FSDP.optim_state_dict(model, optim)`` in the block's layout (its literal
  optimizer config): :mod:`codemods.rules.fsdp401.optim_full`;
- a block of any type whose statements ask the model nothing (they never name it or
  FSDP1, and call only imported functions, builtins and an optimizer's methods: a
  ``LOCAL_STATE_DICT`` block around ``torch.save(opt.state_dict(), path)``) loses its
  ``with``, which changed nothing they do.

A sharded ``set_state_dict_type`` goes where the model's state-dict calls all follow it
(:mod:`codemods.rules.fsdp401.set_type`). Everything else (``LOCAL_STATE_DICT`` on the
model, a config with values, ``summon_full_params``) keeps the file FSDP1;
``optim_state_dict_to_load`` converts where the optimizer's own load of its result
follows it (:mod:`codemods.rules.fsdp401.optim_load`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from codemods.registry import Rule
from codemods.rules.api import Engine
from codemods.rules.fsdp115.plan import (
    DCP_STATE_DICT,
    Plan,
    call_arguments,
    from_fsdp,
    names_free,
    unproven,
)
from codemods.rules.fsdp401 import optim_full, optim_load, set_type, summon
from codemods.rules.fsdp401.dual import needs_dual
from codemods.rules.fsdp401.lookups import fsdp1_reference
from codemods.rules.fsdp401.optim_load import arguments, load_pair
from codemods.rules.fsdp401.values import assignment_of
from codemods.syntax.cst_nodes import dotted, find_all, is_plain_positional, keyword
from codemods.syntax.lazy_libcst import cst

#: Where the survey leaves each plain form, by the ``id`` of its FSDP1 call.
SCRATCH = "FSDP401-checkpoints"

#: What each form does otherwise than FSDP1, for the converted call's finding.
DIFFERENCES = {
    "full": (
        "its `FSDP.state_dict_type(FULL_STATE_DICT)` block becomes `get_model_state_dict` / "
        "`set_model_state_dict` with `full_state_dict=True` (a plain `dict`, no `_metadata`; "
        "with `offload_to_cpu=True, rank0_only=True`: `cpu_offload=True`, every tensor on "
        "the CPU and an empty dict on all but the global rank 0, where FSDP1's `rank0_only` "
        "meant rank 0 of the model's process group: on a subgroup, each group's rank 0)"
    ),
    "sharded": (
        "its `FSDP.state_dict_type(SHARDED_STATE_DICT)` block loses its `with`: FSDP2's "
        "`state_dict()` is sharded already, as DTensors where FSDP1 gave ShardedTensors, so "
        "files `torch.save`d from FSDP1's do not load as they are (torch.distributed."
        "checkpoint directories load by FQN)"
    ),
    "optim-sharded": (
        "`FSDP.optim_state_dict(model, optim)` in that block becomes "
        "`get_optimizer_state_dict(model, optim)`: each rank's part of each state as a "
        "DTensor where FSDP1 gave ShardedTensors, keyed by name"
    ),
    "optim": (
        "`FSDP.optim_state_dict(model, optim)` becomes `get_optimizer_state_dict(model, optim, "
        "options=StateDictOptions(full_state_dict=True))`: the same full state keyed by FQN "
        "(its `param_groups` list the names in the optimizer's order, FSDP1's by flat "
        "parameter), on the parameters' device where FSDP1's default config copied it "
        "to the CPU"
    ),
    "optim-load": optim_load.DIFFERENCE,
    "optim-full": optim_full.DIFFERENCE,
    "set-sharded": set_type.DIFFERENCE,
    "summon": summon.DIFFERENCE,
    "inert": (
        "its `FSDP.state_dict_type(...)` block whose statements ask the model nothing loses "
        "its `with` (it changed nothing they do); an optimizer's own `state_dict()` holds "
        "DTensor shards where FSDP1's held its flat shards, so files saved by FSDP1 runs do "
        "not load as they are"
    ),
}


@dataclass(frozen=True)
class PlainCall:
    """An FSDP1 checkpoint call and its FSDP2 form.

    Attributes:
        call: The ``FSDP.<name>(...)`` call.
        kind: ``"full"``, ``"sharded"``, ``"inert"`` (a block whose statements ask the
            model nothing), ``"optim"``, ``"optim-sharded"``, ``"optim-full"`` (in a full
            block) or ``"optim-load"`` (:data:`DIFFERENCES`).
        plan: FSDP115's plan of a ``"full"`` block (of an ``"optim-full"`` call's block).
        with_node: The ``with`` statement a block form replaces.
        fsdp2_only: A ``"full"`` form that runs on FSDP2's releases only (DCP's
            functions on FSDP1 need torch 2.2, loading 2.4): the dual stack dispatches it.
        pair: An ``"optim-load"`` form's lines: the conversion and the optimizer's load.
    """

    call: cst.Call
    kind: str
    plan: Plan | None = None
    with_node: cst.With | None = None
    fsdp2_only: bool = False
    pair: tuple[cst.SimpleStatementLine, cst.SimpleStatementLine] | None = None

    @property
    def unsafe(self) -> bool:
        """Whether FSDP115 calls this form unsafe (saving with ``cpu_offload``)."""
        if self.kind == "optim-full":  # FSDP1 offloads to the CPU only from a GPU
            return "cpu_offload" in str(self.plan.optim_options)
        return self.plan is not None and unproven(self.plan.function, self.plan.options)


#: FSDP1 calls whose forms have modules of their own (``form`` and ``write``), by name.
OWN_FORMS = {"set_state_dict_type": set_type, "summon_full_params": summon}


def plain_form(engine: Engine, call: cst.Call) -> PlainCall | None:
    """The FSDP2 form of ``call`` (an ``FSDP.<name>(...)`` call), where it is certain."""
    name = call.func.attr.value
    if name == "state_dict_type":
        full = optim_full.full_block(engine, call)
        if full is not None:
            return PlainCall(call, "full", full[0], full[0].with_node, full[1])
        with_node = _sharded_block(engine, call)
        if with_node is not None:
            return PlainCall(call, "sharded", None, with_node)
        with_node = inert_block(engine, call)
        return None if with_node is None else PlainCall(call, "inert", None, with_node)
    if name == "optim_state_dict" and _optim_arguments(call):
        opened = enclosing_block(engine, call)
        wanted = ("get_optimizer_state_dict", "StateDictOptions")
        if not names_free(engine, call, wanted):
            return None
        full = None if opened is None else optim_full.full_block(engine, opened)
        if full is not None and dotted(call.args[0].value) == dotted(full[0].module):
            # read in a full block of the same model: its optimizer config's layout
            return PlainCall(call, "optim-full", full[0], fsdp2_only=full[1])
        if not engine.target_at_least("2.2"):
            return None
        if opened is None:
            return PlainCall(call, "optim")
        if _sharded_block(engine, opened) is not None:  # the block's layout: sharded
            return PlainCall(call, "optim-sharded")
    if name in OWN_FORMS and (kind := OWN_FORMS[name].form(engine, call)) is not None:
        return PlainCall(call, kind)
    if name == "optim_state_dict_to_load" and enclosing_block(engine, call) is None:
        wanted = ("set_optimizer_state_dict", "StateDictOptions")
        # DCP's functions need torch 2.2; the dual stack's FSDP2 branch runs on 2.4 on
        if not (engine.target_at_least("2.2") or needs_dual(engine)):
            return None
        if not names_free(engine, call, wanted):
            return None
        pair = load_pair(engine, call)
        return None if pair is None else PlainCall(call, "optim-load", pair=pair)
    return None


def inert_block(engine: Engine, call: cst.Call) -> cst.With | None:
    """The ``with`` of a ``state_dict_type`` block whose statements ask the model nothing.

    Such a block (Lumina's ``LOCAL_STATE_DICT`` block around ``torch.save(opt.state_dict(),
    ...)``) changes nothing its statements do: they never name the model or FSDP1, and
    call only imported functions, builtins and methods of optimizers.
    """
    opened = _opened_block(engine, call)
    if opened is None:
        return None
    args, with_node = opened
    module = dotted(args.get("module"))
    body = with_node.body
    if module is None or not isinstance(body, cst.IndentedBlock) or body.footer:
        return None
    kind = args.get("state_dict_type")
    if (
        body.header.comment
        or kind is None
        or not any(
            q.startswith("torch.distributed.fsdp") and ".StateDictType." in q
            for q in engine.qualified(kind)
        )
    ):
        return None
    for value in args.values():  # dropped with the `with`: evaluating them must do nothing
        calls = find_all(value, lambda n: isinstance(n, cst.Call))
        if any(not from_fsdp(engine, c.func, "Config") or _has_call(c.args) for c in calls):
            return None
    for node in find_all(body, lambda n: isinstance(n, (cst.Name, cst.Attribute, cst.Call))):
        if fsdp1_reference(engine, node) or dotted(node) == module:
            return None
        if isinstance(node, cst.Call) and not _asks_nothing(engine, node):
            return None
    return with_node


def _has_call(args: Any) -> bool:
    return any(find_all(arg, lambda n: isinstance(n, cst.Call)) for arg in args)


def _asks_nothing(engine: Engine, call: cst.Call) -> bool:
    """Whether ``call`` is of an imported function, a builtin, or an optimizer's method."""
    func = call.func
    while isinstance(func, cst.Attribute):
        func = func.value
    if not isinstance(func, cst.Name):
        return False
    scope = engine.scope(func)
    if scope is None:
        return False
    if func.value not in scope:
        return func.value in BUILTINS
    nodes = [getattr(a, "node", None) for a in scope[func.value]]
    if all(isinstance(n, (cst.Import, cst.ImportFrom)) for n in nodes):
        return True
    # `opt = torch.optim.AdamW(...)`: its methods touch no module's state dict
    return isinstance(call.func, cst.Attribute) and all(
        isinstance(statement := assignment_of(engine, n), cst.Assign)
        and isinstance(statement.value, cst.Call)
        and any(q.startswith("torch.optim.") for q in engine.qualified(statement.value.func))
        for n in nodes
    )


#: Builtins a block may call without asking a model anything.
BUILTINS = frozenset({"print", "len", "str", "int", "float", "dict", "list", "range", "open"})


def _optim_arguments(call: cst.Call) -> bool:
    """Whether the call passes just the model and the optimizer, by position or name."""
    names = ("model", "optim")
    return len(call.args) == 2 and all(
        not arg.star and (is_plain_positional(arg) if i == 0 else keyword(arg) in (None, names[i]))
        for i, arg in enumerate(call.args)
    )


def _opened_block(
    engine: Engine, call: cst.Call
) -> tuple[dict[str, cst.BaseExpression], cst.With] | None:
    """The call's arguments by name and the plain ``with call:`` it opens (one item)."""
    args = call_arguments(call)
    item = engine.parent(call)
    with_node = engine.parent(item) if isinstance(item, cst.WithItem) else None
    if args is None or not isinstance(with_node, cst.With) or item.asname is not None:
        return None
    if len(with_node.items) != 1 or with_node.asynchronous is not None:
        return None
    return args, with_node


def _sharded_block(engine: Engine, call: cst.Call) -> cst.With | None:
    """The ``with`` of a ``SHARDED_STATE_DICT`` block whose ``with`` can simply go."""
    opened = _opened_block(engine, call)
    if opened is None:
        return None
    args, with_node = opened
    if "optim_state_dict_config" in args or dotted(args.get("module")) is None:
        return None
    if not from_fsdp(engine, args.get("state_dict_type"), "StateDictType.SHARDED_STATE_DICT"):
        return None
    config = args.get("state_dict_config")
    if config is not None and not (
        isinstance(config, cst.Call)
        and not config.args
        and from_fsdp(engine, config.func, ".ShardedStateDictConfig")
    ):
        return None
    body = with_node.body
    if not isinstance(body, cst.IndentedBlock) or body.header.comment or body.footer:
        return None
    # Another FSDP1 call in the block answers in its layout: only the optimizer's state
    # of the same model has a sharded FSDP2 form.
    module = dotted(args["module"])
    for node in find_all(body, lambda n: fsdp1_reference(engine, n)):
        used = engine.parent(engine.parent(node))
        if not (
            isinstance(used, cst.Call)
            and isinstance(used.func, cst.Attribute)
            and used.func.value is node
            and used.func.attr.value == "optim_state_dict"
            and _optim_arguments(used)
            and dotted(used.args[0].value) == module
        ):
            return None
    return with_node


def enclosing_block(engine: Engine, node: cst.CSTNode) -> cst.Call | None:
    """The ``state_dict_type(...)`` call of the innermost ``with`` holding ``node``."""
    child, parent = node, engine.parent(node)
    while parent is not None:
        if isinstance(parent, cst.With) and child is parent.body:
            for item in parent.items:
                opened = item.item
                if isinstance(opened, cst.Call) and from_fsdp(
                    engine, opened.func, ".state_dict_type"
                ):
                    return opened
        child, parent = parent, engine.parent(parent)
    return None


def in_plain_block(engine: Engine, node: cst.CSTNode) -> bool:
    """Whether ``node`` is in a block whose form this module writes (its uses go with it).

    Or after a sharded ``set_state_dict_type`` of its model: sharded on both, it stays.
    """
    plain = engine.scratch.get(SCRATCH, {})
    sets = [p.call for p in plain.values() if p.kind == "set-sharded"]
    if sets and set_type.after_set(engine, node, sets):
        return True
    opened = enclosing_block(engine, node)
    return opened is not None and id(opened) in plain


def note_differences(engine: Engine, conversions: dict[int, Any]) -> None:
    """Name on each converted call what the file's checkpoint forms do otherwise."""
    kinds = dict.fromkeys(plain.kind for plain in engine.scratch.get(SCRATCH, {}).values())
    for conversion in conversions.values():
        notes = getattr(getattr(conversion, "keywords", None), "notes", None)
        if isinstance(notes, list):
            notes += [DIFFERENCES[kind] for kind in kinds]


def written(
    engine: Engine, rule: Rule, converts: bool, original: cst.Call, updated: cst.Call
) -> cst.BaseExpression | None:
    """What takes the place of ``original`` where the survey found its plain form.

    None where it has none (or the file does not convert); ``updated`` where its fix does
    not apply in this run.
    """
    plain = engine.scratch.get(SCRATCH, {}).get(id(original))
    if plain is None or not converts:
        return None
    if not engine.report(original, rule, quiet=True, unsafe_here=plain.unsafe):
        return updated
    return write(engine, plain, updated)


def write(
    engine: Engine, plain: PlainCall, updated: cst.Call, importer: Any = None
) -> cst.BaseExpression:
    """Write ``plain``'s form; returns what takes the place of its call.

    ``importer`` gets an optimizer form's imports (the dual stack's ``try``), else ``engine``.
    """
    from codemods.rules.fsdp115 import adopt, adopt_block

    if plain.kind == "full":
        adopt(engine, plain.plan, plain.call)  # FSDP115's block hook writes it
        return updated
    if plain.kind in ("set-sharded", "summon"):  # forms of their own modules
        return OWN_FORMS[plain.call.func.attr.value].write(engine, plain.call, updated, None)
    engine.forget(plain.call.func)
    if plain.kind == "optim-load":
        code = engine.module.code_for_node
        return optim_load.write(engine, plain.pair, [code(v) for v in arguments(updated)])
    if plain.kind.startswith("optim"):
        importer = importer or engine
        importer.need_import(DCP_STATE_DICT, "get_optimizer_state_dict")
        args = [engine.module.code_for_node(arg.value) for arg in updated.args]
        if plain.kind == "optim":  # FSDP1's default layout: full on every rank
            importer.need_import(DCP_STATE_DICT, "StateDictOptions")
            args.append("options=StateDictOptions(full_state_dict=True)")
        text = f"get_optimizer_state_dict({', '.join(args)})"
        if plain.kind == "optim-full":  # the block's optimizer config
            importer.need_import(DCP_STATE_DICT, "StateDictOptions")
            args.append(f"options={plain.plan.optim_options}")
            text = optim_full.call_text(engine, plain.call, args, importer is not engine)
        return cst.parse_expression(text, engine.module.config_for_parsing)
    args = call_arguments(plain.call)
    for value in args.values():  # the model stays; the type and config go with the call
        for node in find_all(value, lambda n: isinstance(n, (cst.Name, cst.Attribute))):
            if from_fsdp(engine, node, ""):
                engine.forget(node)

    adopt_block(engine, plain.with_node)
    return updated
