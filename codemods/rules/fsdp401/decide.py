"""Whether, and how, the FSDP1 wrapper calls of a file convert, for FSDP401.

:func:`survey` looks at the whole file once: each wrapper call's :class:`Conversion`
(or why it has none), the uses of a wrapped model rewritten with it, and why the file
must stay FSDP1 where something does (a call that cannot be translated, a use of the
wrapped model that only FSDP1 has).
"""

from __future__ import annotations

from typing import Any

from codemods.rules.api import Engine
from codemods.rules.fsdp401.arguments import translate
from codemods.rules.fsdp401.bridged import bridged_names, bridges, onto_the_bridge
from codemods.rules.fsdp401.checkpoints import (
    SCRATCH,
    in_plain_block,
    note_differences,
    plain_form,
)
from codemods.rules.fsdp401.companion import (
    companion_anchor,
    companion_blockers,
    note_tests,
    reads_behind_checks,
)
from codemods.rules.fsdp401.dual import dual_blockers, needs_dual
from codemods.rules.fsdp401.fsdp1_only import CHANGED_MEANING, FSDP1_ONLY
from codemods.rules.fsdp401.fsdp2_aware import answers_fsdp2, dispatched_away, paired_with_fsdp2
from codemods.rules.fsdp401.kept import (
    BRIDGE_KEEPS,
    KEPT_RECIPES,
    NO_LOCAL,
    api_call,
    fsdp1_consumer,
    fsdp1_internals,
    local_state_dict,
    loop_reads_fsdp1_state,
    unit_modules,
)
from codemods.rules.fsdp401.keywords import Untranslatable
from codemods.rules.fsdp401.lookups import (
    annotates,
    before_fsdp2,
    before_wrapping,
    fresh,
    fsdp1_reference,
    gated,
    in_import,
    in_loop,
    in_module,
    line_of,
    local_name,
    module_list,
    other_fully_shard,
    source_order,
    tested_class,
)
from codemods.rules.fsdp401.meta import materialise
from codemods.rules.fsdp401.outcome import Bridged, Conversion, Survey, blocker_text
from codemods.rules.fsdp401.policy import RUNTIME_UNITS, RuntimePolicy, unit_classes
from codemods.rules.fsdp401.reach import method_model_reads, reached_models
from codemods.rules.fsdp401.sharding import strategy_mesh
from codemods.rules.fsdp401.spread import named_arguments
from codemods.rules.fsdp401.subclasses import subclass_blockers, subclass_calls
from codemods.rules.fsdp401.uses import Use, rewrite
from codemods.rules.fsdp401.values import shown
from codemods.syntax.cst_nodes import dotted, keyword
from codemods.syntax.lazy_libcst import cst


def _statement(engine: Engine, call: cst.Call) -> tuple[cst.SimpleStatementLine, cst.CSTNode]:
    """The statement line holding ``call`` and the small statement it is part of."""
    node: cst.CSTNode = call
    while True:
        parent = engine.parent(node)
        if isinstance(parent, cst.Arg) and parent.value is node:
            node = engine.parent(parent)  # the call taking it
            continue
        if (
            isinstance(parent, (cst.Assign, cst.AnnAssign, cst.Return, cst.Expr))
            and getattr(parent, "value", None) is node
        ):
            line = engine.parent(parent)
            if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
                return line, parent
        raise Untranslatable(
            "the call is part of an expression the rewrite does not split: "
            "assign the wrapped model to a name first"
        )


def _convert(engine: Engine, call: cst.Call) -> Conversion:
    """How ``call`` becomes FSDP2.

    Raises:
        Untranslatable: Where it cannot be rewritten with certainty, saying why: every
            reason found, so that a user porting it by hand has the whole list.
    """
    reasons: list[str] = []
    try:
        line, small = _statement(engine, call)
    except Untranslatable as why:
        reasons += why.reasons
        line, small = None, None
    args = list(call.args)
    modules = [arg for arg in args if keyword(arg) == "module"]
    if modules:  # `FSDP(module=model, ...)`
        args = modules + [arg for arg in args if arg is not modules[0]]
    if not args or keyword(args[0]) not in (None, "module") or args[0].star:
        raise Untranslatable(*reasons, "the module is not the first positional argument")
    try:  # by position and `**kwargs` too: each by FSDP1's name for it
        named = named_arguments(engine, call, args[1:])
    except Untranslatable as why:
        reasons += why.reasons
        named = [arg for arg in args[1:] if keyword(arg) is not None]
    policies = [arg for arg in named if keyword(arg) == "auto_wrap_policy"]
    classes: list[cst.BaseExpression] = []
    keywords = None
    runtime = None
    try:
        classes = unit_classes(engine, policies[0].value) if policies else []
    except RuntimePolicy:  # the policy itself decides the units at run time, as FSDP1's
        runtime = engine.module.code_for_node(policies[0].value)
    except Untranslatable as why:
        reasons += why.reasons
    try:
        keywords = translate(engine, [arg for arg in named if keyword(arg) != "auto_wrap_policy"])
    except Untranslatable as why:
        reasons += why.reasons
    code = engine.module.code_for_node
    root, before = code(args[0].value), None
    if dotted(args[0].value) is None and small is not None:
        if getattr(small, "value", None) is not call:
            reasons.append("the module is an expression: assign it to a name first")
        else:
            # The call is the statement's value, so its module is what the statement
            # evaluates first: binding it to a name just before changes no order.
            targets = getattr(small, "targets", ())
            target = targets[0].target if len(targets) == 1 else None
            root = (
                code(target) if target is not None and dotted(target) else local_name(engine, call)
            )
            before = f"{root} = {code(args[0].value)}"
    if reasons or line is None or keywords is None:
        raise Untranslatable(*reasons)
    materialise(engine, keywords)
    strategy_mesh(engine, keywords, root)
    if runtime is not None:
        keywords.notes.insert(0, RUNTIME_UNITS)
    return Conversion(call, line, root, before, tuple(code(c) for c in classes), keywords, runtime)


def _use_of(
    engine: Engine, node: cst.Attribute, bound: dict[tuple[int, str], list[tuple[int, int]]]
) -> tuple[int, Use] | None:
    """The wrapper call whose result ``node``'s call is certainly on, and its rewrite."""
    call = engine.parent(node)
    if not isinstance(call, cst.Call) or call.func is not node or gated(engine, call):
        return None  # a version-gated branch is not visited for rewriting: it stays FSDP1
    receiver = engine.module.code_for_node(node.value)
    line = line_of(engine, node)
    before = [b for b in bound.get((id(engine.scope(node)), receiver), []) if b[0] < line]
    if not before:
        return None
    use = rewrite(engine, call, receiver)
    return None if use is None else (max(before)[1], use)


def _of_plain_call(engine: Engine, node: cst.CSTNode) -> bool:
    """Whether ``node`` is an argument of an FSDP1 call with an FSDP2 form (an inert block)."""
    arg = engine.parent(node)
    call = engine.parent(arg) if isinstance(arg, cst.Arg) else None
    return call is not None and id(call) in engine.scratch.get(SCRATCH, {})


def survey(engine: Engine, rule_code: str) -> Survey:
    """Each FSDP1 wrapper call of the module: its conversion, or why it has none."""
    module = engine.module
    # The engine's list of calls spares a walk of the module.
    calls = [n for n in engine.nodes(cst.Call) if fsdp1_reference(engine, n.func)]
    subclassed = tuple(subclass_calls(engine))
    companion = not calls and bool(engine.settings.fsdp1_companion)
    if not calls and not companion:
        # Nothing converted: the rest (checks, uses, what blocks) is asked only of a
        # converted file, or of one converted with its project's calls.
        return Survey({}, {}, None, subclass_calls=subclassed)
    calls.sort(key=lambda call: source_order(engine, call))
    conversions: dict[int, Conversion | Bridged | str] = {}
    uses: dict[int, list[Use]] = {}
    # Calls of the file's own FSDP1 subclasses stay FSDP1 (their finding says why): the file too.
    blockers = subclass_blockers(engine, subclassed)
    wrapped = set()
    # (scope, name) -> (line, wrapper call) where a wrapper call's result is bound
    bound: dict[tuple[int, str], list[tuple[int, int]]] = {}
    # name -> (scope, line, in a loop[, the call]) of each wrapper call that makes it FSDP
    sites: dict[str, list[tuple[Any, ...]]] = {}
    for call in calls:
        if gated(engine, call) or engine.silenced(call, rule_code):
            blockers.append(f"the FSDP1 call at line {line_of(engine, call)} is kept on purpose")
            continue
        try:
            conversion = _convert(engine, call)
        except Untranslatable as why:
            if bridges(engine):
                conversions[id(call)] = Bridged(call, str(why))
                site = (engine.scope(call), line_of(engine, call), in_loop(engine, call))
                for name in bridged_names(engine, call):
                    wrapped.add(name)
                    sites.setdefault(name, []).append(site)
                    key = (id(engine.scope(call)), name)
                    bound.setdefault(key, []).append((line_of(engine, call), id(call)))
                continue
            conversions[id(call)] = str(why)
            blockers.append(f"the FSDP1 call at line {line_of(engine, call)} stays: {why}")
            continue
        conversions[id(call)] = conversion
        wrapped.add(conversion.root)
        site = (engine.scope(call), line_of(engine, call), in_loop(engine, call), call)
        sites.setdefault(conversion.root, []).append(site)
        statement = conversion.line.body[0]
        for target in getattr(statement, "targets", ()):
            name = module.code_for_node(target.target)
            wrapped.add(name)
            sites.setdefault(name, []).append(site)
            if getattr(statement, "value", None) is call:
                key = (id(engine.scope(call)), name)
                bound.setdefault(key, []).append((line_of(engine, call), id(call)))
    blockers += method_model_reads(engine, conversions)  # a method's model on `self`
    for name, site, line, key in reached_models(engine, conversions):  # beyond its name
        wrapped.add(name)
        sites.setdefault(name, []).append(site)
        bound.setdefault((id(site[0]), name), []).append((line, key))
    funcs = {id(call.func) for call in calls}
    frozen = frozenset(wrapped)
    checks = set()
    tested = set()  # the checks that are isinstance tests (not annotations)
    lists = set()
    unit_loops = set()  # the listings whose loop reads `unit.module`
    api_calls = set()
    # What only the bridge's model answers: where, its kind, why it blocks without it.
    kept: list[tuple[str, str, str]] = []
    for node in in_module(engine, lambda n: isinstance(n, (cst.Name, cst.Attribute))):
        if id(node) in funcs or in_import(engine, node):
            continue
        # FSDP1 code in a torch gate's branch for releases without FSDP2 is never run
        # by a converted file: it stays as written (asked only of what would count).
        if local_state_dict(engine, node):
            if not before_fsdp2(engine, node) and not _of_plain_call(engine, node):
                where = f"`{shown(engine, node)}` at line {line_of(engine, node)}"
                kept.append((where, "local", f"{where}: {NO_LOCAL}"))
            continue
        consumer = fsdp1_consumer(engine, node)
        if consumer is not None and not gated(engine, node):
            blockers.append(f"`{shown(engine, node)}` at line {line_of(engine, node)}: {consumer}")
            continue
        if (
            fsdp1_internals(engine, node)
            and not gated(engine, node)
            and not dispatched_away(engine, node)
        ):
            where = f"`{shown(engine, node)}` at line {line_of(engine, node)}"
            blockers.append(f"{where} is FSDP1's internals, which FSDP2 models do not have")
            continue
        if fsdp1_reference(engine, node):
            is_test = tested_class(engine, node)
            if (
                before_fsdp2(engine, node)
                or answers_fsdp2(engine, node)
                or (is_test and paired_with_fsdp2(engine, node))
                or dispatched_away(engine, node)
            ):
                continue  # never reached by a converted model: left as written
            if (is_test or annotates(engine, node)) and not gated(engine, node):
                checks.add(id(node))
                if is_test:
                    tested.add(id(node))
                continue
            listing = module_list(engine, node)
            if listing is not None and not gated(engine, node):
                if loop_reads_fsdp1_state(engine, listing, FSDP1_ONLY):
                    where = f"`{shown(engine, listing)}` at line {line_of(engine, node)}"
                    blockers.append(f"{where}: the loop reads FSDP1's state of each unit")
                    continue
                lists.add(id(listing))
                if unit_modules(engine, listing):  # `unit.module` in its loop: FSDP1's
                    unit_loops.add(id(listing))
                continue
            api = api_call(engine, node)
            where = f"`{shown(engine, api or node)}` at line {line_of(engine, node)}"
            if api is not None and not gated(engine, node):
                plain = None if bridges(engine) else plain_form(engine, api)
                if plain is not None:  # checkpoint code with an FSDP2 form
                    engine.scratch.setdefault(SCRATCH, {})[id(api)] = plain
                    continue
                api_calls.add(id(api))
                kind = api.func.attr.value if api.func.attr.value in KEPT_RECIPES else "api"
                kept.append((where, kind, f"{where} is FSDP1 only"))
                continue
            blockers.append(f"{where} is FSDP1 only")
            continue
        if not isinstance(node, cst.Attribute) or module.code_for_node(node.value) not in wrapped:
            continue
        method = node.attr.value
        if method not in FSDP1_ONLY and method not in CHANGED_MEANING:
            continue
        if before_wrapping(engine, node, sites[module.code_for_node(node.value)], frozen):
            continue  # the plain module still: the same on FSDP1 and FSDP2
        if in_plain_block(engine, node):
            continue  # rewritten with its block (or sharded on both, as the block asked)
        found = _use_of(engine, node, bound)
        if found is not None:
            uses.setdefault(found[0], []).append(found[1])
            continue
        why = CHANGED_MEANING.get(method, "exists only on FSDP1 models")
        where = f"`{shown(engine, node)}` at line {line_of(engine, node)}"
        if method in BRIDGE_KEEPS:
            kept.append((where, method, f"{where}: {why}"))
            continue
        recipe = f" (on FSDP2: {KEPT_RECIPES[method]})" if method in KEPT_RECIPES else ""
        blockers.append(f"{where}: {why}{recipe}")
    note_differences(engine, conversions)
    note_tests(conversions, engine.settings.fsdp1_tests_elsewhere)
    if any(isinstance(c, Conversion) for c in conversions.values()) and other_fully_shard(engine):
        kept.append(("`fully_shard`", "fully_shard", "`fully_shard` is a name of another API here"))
    if (tested or lists) and fresh(engine, "FSDPModule") != "FSDPModule":
        # Such a file tells FSDP1 models from FSDP2 ones already (`isinstance(m, FSDP)`
        # then `elif isinstance(m, FSDPModule)`): rewriting its FSDP1 checks would send
        # every FSDP2 model down the FSDP1 branch.
        blockers.append(
            "`FSDPModule` is a name here: the file already tells FSDP1 from FSDP2, and "
            "its FSDP1 checks rewritten would take FSDP2 models for FSDP1 ones"
        )
    project = [engine.settings.fsdp1_held] if engine.settings.fsdp1_held else []
    elsewhere = engine.settings.fsdp1_elsewhere
    if elsewhere and any(isinstance(c, (Conversion, Bridged)) for c in conversions.values()):
        more = f" (and {len(elsewhere) - 1} more)" if len(elsewhere) > 1 else ""
        project.append(
            f"{elsewhere[0]}{more} expects an FSDP1 model in another file of this project, "
            f"which stays FSDP1: {engine.settings.fsdp1_elsewhere_why or 'convert them together'}"
        )
    blockers += project
    calls_elsewhere = engine.settings.fsdp1_api_elsewhere
    if calls_elsewhere and any(isinstance(c, Conversion) for c in conversions.values()):
        # Plain FSDP2 models do not answer them; the bridge's model does.
        where = f"{calls_elsewhere[0]} in another file of this project"
        kept.append((where, "api", f"{where} needs FSDP1's API on the model"))
    if api_calls and fresh(engine, "FSDP1Api") != "FSDP1Api":
        blockers.append("`FSDP1Api`, which the bridged calls need, is a name here")
    if companion:
        blockers += companion_blockers(engine, frozenset(checks), FSDP1_ONLY)
    else:
        # What the file does with a value it takes for an FSDP1 model (`def f(m: FSDP)`,
        # `if isinstance(m, FSDP):`): the checks become FSDPModule, the reads would stay.
        for node, method in reads_behind_checks(
            engine, frozenset(checks), (*FSDP1_ONLY, *CHANGED_MEANING)
        ):
            if module.code_for_node(node.value) in wrapped:
                continue  # a wrapped model's name: its uses are read above
            where = f"`{shown(engine, node)}` at line {line_of(engine, node)}"
            why = CHANGED_MEANING.get(method, "exists only on FSDP1 models")
            if method in BRIDGE_KEEPS:
                kept.append((where, method, f"{where}: {why}"))
            else:
                blockers.append(f"{where}: {why}")
    if kept and not bridges(engine):
        # What to write on FSDP2 instead: the hand port the bridge would spare.
        blockers += [f"{why} (on FSDP2: {KEPT_RECIPES[kind]})" for _, kind, why in kept]
    elif kept and not blockers:
        onto_the_bridge(conversions, [(where, kind) for where, kind, _ in kept])
    dual = None
    plain = [c for c in conversions.values() if isinstance(c, Conversion)]
    if needs_dual(engine) and (companion or plain):
        # The wrapper calls, the uses of their models, isinstance tests and listings
        # dispatch on the flag: annotations naming FSDP1 stay as written.
        checks = checks if companion else set(tested)
        others = frozenset(checks) | lists if companion else frozenset(unit_loops)
        blockers += dual_blockers(engine, plain, others | api_calls)
        dual = fresh(engine, "HAS_FSDP2")
    for key, conversion in conversions.items():
        if isinstance(conversion, Bridged) and key in uses:
            # The bridge's model keeps FSDP1's state-dict methods, and the type that
            # FSDP1Api.state_dict_type sets for them: those calls stay as written.
            uses[key] = [use for use in uses[key] if use.method not in CHANGED_MEANING]
    return Survey(
        conversions,
        uses,
        blocker_text(sorted(blockers, key=project.__contains__)),  # the file's own first
        frozenset(checks),
        frozenset(lists),
        frozenset(api_calls),
        companion_anchor(engine, checks | lists | api_calls, bool(blockers)) if companion else None,
        subclassed,
        dual,
    )
