"""The dual stack's code: each converted call, and each use of its model, under the flag.

Where FSDP1 stays beside FSDP2 (:mod:`codemods.rules.fsdp401.dual`), the wrapper call's
statement becomes ``if HAS_FSDP2:`` its plain FSDP2 code ``else:`` the statement as
written, and so does every use of the wrapped model the plain form rewrites
(:mod:`codemods.rules.fsdp401.uses`): a simple statement holding one is dispatched
whole, one in a compound statement's header is the expression ``(new if HAS_FSDP2 else
old)``. Three uses keep one body, each exact on both branches:

- ``with model.no_sync():`` chooses its context by the flag,
  ``no_sync_like_fsdp1(model) if HAS_FSDP2 else model.no_sync()`` (a helper written once
  per file: the plain form's switch off for the block, on after it however it ends);
- ``isinstance(m, FSDP)`` tests ``FSDPModule if HAS_FSDP2 else FSDP``;
- ``FSDP.fsdp_modules(model)`` is the plain form's list if ``HAS_FSDP2``, else the call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from codemods.registry import Rule
from codemods.registry.names import COMPOSABLE_FSDP
from codemods.rules.api import Engine
from codemods.rules.fsdp401.helpers import helper_names, write_helpers
from codemods.rules.fsdp401.lookups import imported_here, in_module
from codemods.rules.fsdp401.uses import Use
from codemods.rules.layout import LINE_LENGTH, indentation, wrapped_call
from codemods.syntax.cst_dispatch import CachedDispatch
from codemods.syntax.cst_nodes import find_all
from codemods.syntax.lazy_libcst import cst

if TYPE_CHECKING:
    from codemods.rules.fsdp401.outcome import Conversion, Survey

#: Where the collected imports of the FSDP2 branches wait for the module's ``try``.
IMPORTS = "FSDP401-dual"


def writer(engine: Engine) -> Any:
    """The engine, its FSDP2 imports collected for the ``try`` (``CollectingImports``)."""
    from codemods.rules.fsdp401.dual import CollectingImports

    return CollectingImports(engine, engine.scratch.setdefault(IMPORTS, []))


def dual_call(
    engine: Engine, found: Survey, conversion: Conversion, original: cst.Call, inner: bool
) -> None:
    """Put the call's statement, and each use of its model, under ``if flag:`` FSDP2 code.

    The FSDP1 call stays as the other rules left it; the FSDP2 branch is the plain form,
    whose imports are collected for the module's ``try`` (:func:`dual_imports`).
    """
    from codemods.rules.fsdp401.dual import dual_statement
    from codemods.rules.fsdp401.nested import as_unit
    from codemods.rules.fsdp401.text import bound_first, statements_before

    flag, collecting = found.dual, writer(engine)
    assert flag is not None
    for use in found.uses.get(id(original), ()):
        # Later in the same scope than this call: visited after it. First, so that a
        # helper they need is written with the call's own.
        dispatch_use(engine, collecting, flag, use)
    for name in ("fully_shard", *conversion.keywords.imports):
        collecting.need_import(COMPOSABLE_FSDP, name)
    for module, name in conversion.keywords.more_imports:
        if not imported_here(engine, original, module, name):
            collecting.need_import(module, name)
    one = engine.module.default_indent
    indent = indentation(engine, conversion.line) + one
    bindings, keywords, unit_keywords = bound_first(collecting, conversion, indent)
    if inner:  # itself a unit of the root wrapped later
        keywords = as_unit(conversion, keywords)
    # A call at module level gets the helpers before it: before its `if`, not inside.
    helpers = write_helpers(collecting, conversion.line)
    statements = statements_before(collecting, conversion, indent, bindings, unit_keywords)
    taken = len(indent + conversion.root + " = ")
    text = wrapped_call("fully_shard", [conversion.root, *keywords], one, "", taken, "", False)
    call = cst.parse_expression(text, engine.module.config_for_parsing)
    fsdp2 = conversion.line.deep_replace(conversion.call, call).with_changes(leading_lines=())

    def both(line: cst.SimpleStatementLine) -> cst.CSTNode:
        chosen = dual_statement(flag, [*statements, fsdp2], line)
        if not helpers:
            return chosen
        first = helpers[0].with_changes(
            leading_lines=[*line.leading_lines, *helpers[0].leading_lines]
        )
        after = chosen.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
        return cst.FlattenSentinel([first, *helpers[1:], after])

    engine.replace(conversion.line, both)


#: What each dispatched use's FSDP2 branch does otherwise than FSDP1's method.
DIFFERENCES = {
    "no_sync": (
        "`{helper}(model)` turns gradient sync back on after the block, where FSDP1 "
        "restores what it was"
    ),
    "clip_grad_norm_": (
        "`torch.nn.utils.clip_grad_norm_` of the parameters, a norm the code reads made "
        "whole with `.full_tensor()` (with no gradient at all torch returns a plain 0, "
        "which has none)"
    ),
    "state_dict": "DCP's `get_model_state_dict` gathers the full state dict",
    "load_state_dict": "DCP's `set_model_state_dict` loads the full state dict",
}


def uses_note(engine: Engine, found: Survey, original: cst.Call) -> str | None:
    """The finding's note on the uses of ``original``'s model dispatched on the flag too."""
    from codemods.rules.fsdp401.lookups import line_of
    from codemods.rules.fsdp401.values import shown

    said = []
    for use in found.uses.get(id(original), ()):
        node = use.call.items[0].item if isinstance(use.call, cst.With) else use.call
        helper = helper_names(engine, ["no_sync"])["no_sync"] if use.method == "no_sync" else ""
        how = DIFFERENCES.get(use.method, "its plain form").format(helper=helper)
        said.append(f"`{shown(engine, node)}` at line {line_of(engine, use.call)} ({how})")
    first = next((c for c in found.conversions.values() if not isinstance(c, str)), None)
    if found.module_lists and first is not None and first.call is original:  # the file's
        for listing in in_module(engine, lambda n: id(n) in found.module_lists):
            where = f"`{shown(engine, listing)}` at line {line_of(engine, listing)}"
            said.append(f"{where} (on FSDP2 the sharded modules themselves, not wrappers)")
    if not said:
        return None
    return f"the model's uses dispatch on `{found.dual}` too: {', '.join(said)}"


def dual_imports(engine: Engine, rule: Rule, found: Survey, withheld: str | None) -> None:
    """FSDP2's imports, in a ``try`` after the file's own, and the flag they set.

    Written as the visit leaves the module, once every converted call has said what its
    FSDP2 code imports.
    """
    from codemods.rules.fsdp401.dual import with_import_block
    from codemods.rules.fsdp401.outcome import Conversion

    plain = [c for c in found.conversions.values() if isinstance(c, Conversion)]
    if not plain or not engine.report(plain[0].call, rule, quiet=True, withheld=withheld):
        return
    imports = engine.scratch.setdefault(IMPORTS, [])
    flag = found.dual
    engine.replace(engine.module, lambda module: with_import_block(engine, module, imports, flag))


def _chosen(
    engine: Engine,
    original: cst.CSTNode,
    flag: str,
    fsdp2: cst.BaseExpression,
    fsdp1: cst.BaseExpression,
    parens: bool = True,
) -> cst.BaseExpression:
    """``(fsdp2 if flag else fsdp1)`` in ``original``'s place, on more lines where long.

    As formatters lay it out: each part on its own line inside the parentheses, where the
    statement's first line would pass :data:`LINE_LENGTH` (and neither part has lines).
    """
    code = engine.module.code_for_node
    new, old = code(fsdp2.with_changes(lpar=[], rpar=[])), code(fsdp1)
    statement = original
    while not isinstance(statement, cst.BaseStatement):
        statement = engine.parent(statement)
    indent = indentation(engine, statement)
    first = code(statement.with_changes(leading_lines=())).split("\n")[0]
    one_line = f"({new} if {flag} else {old})"
    width = len(indent + first) - len(code(original)) + len(one_line) - 2 * (not parens)
    config = engine.module.config_for_parsing
    if width <= LINE_LENGTH or "\n" in new + old:
        return cst.parse_expression(one_line if parens else one_line[1:-1], config)
    one = engine.module.default_indent  # libcst indents each line with the block
    text = f"(\n{one}{new}\n{one}if {flag}\n{one}else {old}\n)"
    return cst.parse_expression(text, config)


def _branches(flag: str, fsdp2: list[cst.BaseStatement], fsdp1: cst.BaseStatement) -> cst.If:
    """``if flag:`` ``fsdp2`` ``else:`` ``fsdp1``, with ``fsdp1``'s comments above."""
    first = fsdp2[0].with_changes(leading_lines=())
    return cst.If(
        test=cst.Name(flag),
        body=cst.IndentedBlock(body=[first, *fsdp2[1:]]),
        orelse=cst.Else(body=cst.IndentedBlock(body=[fsdp1.with_changes(leading_lines=())])),
        leading_lines=fsdp1.leading_lines,
    )


class _Swap(CachedDispatch):
    """Puts new nodes in the place of original ones (by ``id``)."""

    def __init__(self, new: dict[int, cst.CSTNode]) -> None:
        super().__init__()
        self._new = new

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        return self._new.get(id(original_node), updated_node)


def dispatch_use(engine: Engine, collecting: Any, flag: str, use: Use) -> None:
    """Write ``use`` (a call on the wrapped model) for both stacks, chosen by ``flag``.

    Built on what the plain form writes (:meth:`Use.replacement`, :attr:`Use.imports`):
    an expression's statement line is dispatched whole (the FSDP2 branch with every use
    of the line rewritten); an expression in a compound statement's header becomes
    ``(new if flag else old)``; a statement use (its replacement built from the
    statement) is dispatched whole, except ``no_sync``, whose context the flag chooses.
    """
    for module, name in use.imports:
        collecting.need_import(module, name)
    new = use.replacement()
    if use.method == "no_sync" and isinstance(use.call, cst.With):
        _no_sync(engine, flag, use.call)
        return
    if callable(new):  # a statement's form, built from it
        build = new

        def both(updated: cst.BaseStatement) -> cst.If:
            built = build(updated)
            nodes = list(built.nodes) if isinstance(built, cst.FlattenSentinel) else [built]
            return _branches(flag, nodes, updated)

        engine.replace(use.call, both)
        return
    line: cst.CSTNode | None = engine.parent(use.call)
    while line is not None and not isinstance(line, cst.BaseStatement):
        line = engine.parent(line)
    if not isinstance(line, cst.SimpleStatementLine):  # a header: `if m.clip_grad_norm_(1):`
        call = use.call
        engine.replace(call, lambda updated: _chosen(engine, call, flag, new, updated))
        return
    pending = engine.scratch.setdefault("FSDP401-dual-lines", {})
    if id(line) not in pending:  # one replacement, holding each use of the line
        pending[id(line)] = swaps = {}
        fsdp2 = line

        def both_lines(updated: cst.SimpleStatementLine) -> cst.If:
            return _branches(flag, [fsdp2.visit(_Swap(swaps))], updated)

        engine.replace(line, both_lines)
    pending[id(line)][id(use.call)] = new


def _no_sync(engine: Engine, flag: str, statement: cst.With) -> None:
    """``model.no_sync()`` as ``no_sync_like_fsdp1(model) if flag else model.no_sync()``.

    The ``with`` keeps its one body; a conditional item (``model.no_sync() if c else
    nullcontext()``) keeps its test: the null context changes nothing on either stack.
    """
    item = statement.items[0].item
    call = item.body if isinstance(item, cst.IfExp) else item
    receiver = engine.module.code_for_node(call.func.value)
    helper = helper_names(engine, ["no_sync"])["no_sync"]
    fsdp2 = cst.parse_expression(f"{helper}({receiver})", engine.module.config_for_parsing)
    parens = isinstance(item, cst.IfExp)  # the item itself needs none
    engine.replace(call, lambda updated: _chosen(engine, call, flag, fsdp2, updated, parens))


def flagged_class(engine: Engine, flag: str) -> Any:
    """What an ``isinstance`` test's FSDP1 class becomes: ``FSDPModule if flag else FSDP``."""
    writer(engine).need_import(COMPOSABLE_FSDP, "FSDPModule")
    return lambda old: cst.IfExp(test=cst.Name(flag), body=cst.Name("FSDPModule"), orelse=old)


def flagged_listing(
    engine: Engine, flag: str, fsdp2: str, original: cst.Call, updated: cst.Call
) -> cst.BaseExpression:
    """``FSDP.fsdp_modules(model)`` as ``(fsdp2 if flag else FSDP.fsdp_modules(model))``."""
    writer(engine).need_import(COMPOSABLE_FSDP, "FSDPModule")
    new = cst.parse_expression(fsdp2, engine.module.config_for_parsing)
    return _chosen(engine, original, flag, new, updated)


def dual_checkpoint(
    engine: Engine, rule: Rule, found: Survey, original: cst.Call, updated: cst.Call
) -> cst.BaseExpression | None:
    """FSDP1's checkpoint call with an FSDP2 form, dispatched on the flag; None: not one.

    A ``SHARDED_STATE_DICT`` block's FSDP2 form (its body without the ``with``) is not
    FSDP1's (whose default state dict is full): the block becomes ``if flag:`` its body
    ``else:`` the block as written. ``FSDP.optim_state_dict(...)`` outside it becomes
    ``(get_optimizer_state_dict(...) if flag else FSDP.optim_state_dict(...))``.
    ``FULL_STATE_DICT`` blocks keep FSDP115's DCP form, which is FSDP1's on FSDP1 models.
    """
    from codemods.rules.fsdp401.checkpoints import SCRATCH, write

    plain = engine.scratch.get(SCRATCH, {}).get(id(original))
    flag = found.dual
    if plain is None or flag is None or not found.converts():
        return None
    if plain.kind == "inert" or (plain.kind in ("full", "optim-full") and not plain.fsdp2_only):
        return None  # the same form on both stacks
    if not engine.report(original, rule, quiet=True, unsafe_here=plain.unsafe):
        return updated
    if plain.kind == "full":
        _dispatch_full(engine, flag, plain)
        return updated
    if plain.kind == "optim-load":  # the FSDP1 call stays in the pair's `else:`
        from codemods.rules.fsdp401 import optim_load

        code = engine.module.code_for_node
        args = [code(v) for v in optim_load.arguments(updated)]
        # DCP's names import plainly where every release has them (as other forms do)
        importer = engine if engine.target_at_least("2.2") else writer(engine)
        optim_load.write_dual(engine, importer, flag, plain.pair, args)
        return updated
    if plain.kind == "sharded":
        block = plain.with_node

        def both(opened: cst.With) -> cst.If:
            # FSDP1's branch as written: the updated block holds the FSDP2 optimizer call
            return _branches(flag, list(opened.body.body), block)

        engine.replace(block, both)
        return updated
    if plain.kind == "set-sharded":  # FSDP1's branch sets it; FSDP2's is sharded already
        from codemods.rules.fsdp401.set_type import write as drop_set

        return drop_set(engine, plain.call, updated, flag)
    if plain.kind == "summon":  # the helper where FSDP2 runs, FSDP1's call where not
        from codemods.rules.fsdp401.summon import write as unsharded

        return _chosen(engine, original, flag, unsharded(engine, original, updated, flag), updated)
    if plain.kind == "optim-full":  # in a block dispatched whole: its FSDP2 side
        return write(engine, plain, updated, writer(engine))
    new = write(engine, plain, updated)
    if plain.kind == "optim-sharded":  # in a block dispatched whole: its FSDP2 side
        return new
    return _chosen(engine, original, flag, new, updated)


def _dispatch_full(engine: Engine, flag: str, plain: Any) -> None:
    """A ``FULL_STATE_DICT`` block whose DCP form needs FSDP2's releases, on both stacks.

    ``if flag:`` its state-dict statement as DCP's ``else:`` the block with that one
    statement; its other statements (which do not name the model) follow, once. The
    DCP names come from the dual stack's ``try`` (torch before 2.2 has none); the
    block's config stays, FSDP1's branch passes it. A block that also reads the
    optimizer's state in its layout is dispatched whole: ``else:`` the block as written.
    """
    from codemods.rules.fsdp115 import rewritten_statement
    from codemods.rules.fsdp115.plan import DCP_STATE_DICT, optim_read

    collecting = writer(engine)
    collecting.need_import(DCP_STATE_DICT, plain.plan.function)
    collecting.need_import(DCP_STATE_DICT, "StateDictOptions")
    indent = indentation(engine, plain.with_node) + engine.module.default_indent

    reads = find_all(plain.with_node, lambda n: optim_read(engine, n, plain.plan.module))

    def both(opened: cst.With) -> list[cst.BaseStatement]:
        first, *rest = opened.body.body
        fsdp2 = rewritten_statement(plain.plan, opened, engine, indent)
        if reads:  # `rest` holds the optimizer's reads as FSDP2's
            return [_branches(flag, [fsdp2, *rest], plain.with_node)]
        fsdp1 = opened.with_changes(body=opened.body.with_changes(body=[first]))
        return [_branches(flag, [fsdp2], fsdp1), *rest]

    # FSDP115's block hook puts the statements in the block's place (with the others
    # the block's rewrites leave: one statement becoming several shifts no other's).
    engine.scratch.setdefault("FSDP115", {})[id(plain.with_node)] = both
