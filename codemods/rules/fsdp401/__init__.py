"""FSDP401: an FSDP1 wrapper call rewritten as FSDP2 ``fully_shard`` calls.

``model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}), **kwargs)`` becomes::

    for submodule in reversed(list(model.modules())):  # descendants before ancestors
        if isinstance(submodule, Block) and submodule is not model:
            fully_shard(submodule, **fsdp2_kwargs)
    model = fully_shard(model, **fsdp2_kwargs)

``Module.modules()`` lists a module before everything under it (pre-order), so the
reversed list puts every descendant before its ancestors, as FSDP2 requires; the root
(always FSDP1's outermost unit) is sharded last, and ``fully_shard`` returns the same
object, so the call may stay an assignment, a return value or an argument. The loop
goes before the statement holding the call.

A file is converted whole or not at all (:func:`codemods.rules.fsdp401.decide.survey`):
one wrapper call the rewrite cannot translate, or a use of the wrapped model that only
FSDP1 has, withholds the fix of every call in the file, and each finding says why.

The rule's parts: :mod:`~codemods.rules.fsdp401.decide` says whether and how each call
converts (with ``lookups``, ``policy`` for the unit classes, ``uses`` for the calls on
the wrapped model and ``arguments`` for the keywords), :mod:`~codemods.rules.fsdp401.text`
writes the statements put before the call, and this module holds the hooks the engine
calls, with the rewrites they make in place (the call itself, ``isinstance`` checks,
``fsdp_modules`` lists).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from codemods.registry import Rule
from codemods.registry.names import COMPOSABLE_FSDP, TORCH_FSDP, TORCH_FSDP_CLASSES
from codemods.rules.api import Behaviour, Detector, Engine
from codemods.rules.fsdp401.inference import inference_note
from codemods.rules.fsdp401.kept import FSDP1_API, LEAVING_THE_BRIDGE, unit_modules
from codemods.rules.fsdp401.local_imports import ConversionImports
from codemods.rules.fsdp401.lookups import ISINSTANCE, fresh, imported_here, line_of
from codemods.rules.fsdp401.nested import INNER, as_unit, wrapping_root
from codemods.rules.fsdp401.recipes import BRIDGE_OPTION, HAND_PORT
from codemods.rules.layout import indentation, inner_indent, wrapped_call
from codemods.syntax import ast_nodes as on_ast
from codemods.syntax.ast_nodes import Undecided
from codemods.syntax.cst_nodes import find_all
from codemods.syntax.lazy_libcst import cst

if TYPE_CHECKING:
    from codemods.rules.fsdp401.outcome import Bridged, Survey

# The survey, its outcome and the text it writes are imported by the libcst hooks that
# use them: every run loads this module (the registry's behaviours), few convert a call.

#: FSDP1's list of the FSDP modules under a module, by each spelling of the class.
FSDP_MODULES = tuple(f"{name}.fsdp_modules" for name in TORCH_FSDP_CLASSES)
#: FSDP1's class-level calls ``compat``'s ``FSDP1Api`` takes, by each spelling.
API_CALLS = tuple(f"{name}.{call}" for name in TORCH_FSDP_CLASSES for call in FSDP1_API)


def _forget_fsdp1_names(engine: Engine, call: cst.CSTNode) -> None:
    """Queue the imports the removed FSDP1 call (or dead binding) used, where now unused.

    Every import the call names: the FSDP1 ones, and any a dropped argument alone used
    (``device_id=torch.cuda.current_device()`` the file's only use of ``torch``). An
    import still used elsewhere stays.
    """
    for node in find_all(call, lambda n: isinstance(n, (cst.Name, cst.Attribute))):
        if engine.qualified(node):
            engine.forget(node)


class Fsdp401(Behaviour):
    """Rewrite each FSDP1 wrapper call when every one in the file can be rewritten."""

    definitions = True  # a function's annotations naming the FSDP1 class
    modules = True  # earlier bindings of a precision the call passes
    classes = True  # the file's own subclasses of FSDP1's class (reported by module())

    def calls(self) -> tuple[str, ...]:
        return (*TORCH_FSDP_CLASSES, ISINSTANCE, *FSDP_MODULES, *API_CALLS)

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if not engine.settings.enabled(self.rule):
            return updated
        from codemods.rules.fsdp401.helpers import spaced
        from codemods.rules.fsdp401.outcome import Bridged
        from codemods.rules.fsdp401.text import bound_first, statements_before

        found = self._survey(engine)
        called = engine.qualified(original.func)
        if ISINSTANCE in called:
            return _class_check(engine, self.rule, found, original, updated)
        if called & set(FSDP_MODULES):
            return _module_listing(engine, self.rule, found, original, updated)
        if called & set(API_CALLS):
            return _api_call(engine, self.rule, found, original, updated)
        conversion = found.conversions.get(id(original))
        if conversion is None:
            return updated
        if isinstance(conversion, str):
            detail = f"{conversion}; {HAND_PORT}"
            if engine.target_at_least("2.6"):  # where the bridge would take it
                detail += f", {BRIDGE_OPTION}"
            engine.report(original, self.rule, fixable_here=False, detail=detail)
            return updated
        if isinstance(conversion, Bridged):
            return _bridge(engine, self.rule, found, original, updated, conversion)
        root = wrapping_root(engine, conversion, list(found.conversions.values()))
        inner = [INNER.format(root=root.root, line=line_of(engine, root.call))] if root else []
        notes = "; ".join([*inner, *conversion.keywords.notes, *inference_note(engine)]) or None
        if found.dual is not None:
            from codemods.rules.fsdp401.dual import WHY_DUAL
            from codemods.rules.fsdp401.dual_code import uses_note

            span, used = engine.settings.releases.torch.text(), uses_note(engine, found, original)
            why = [WHY_DUAL.format(span=span, flag=found.dual), *([used] if used else [])]
            notes = "; ".join([*why, *([notes] if notes else [])])
        withheld = f"fix withheld: {found.blocker}" if found.blocker else None
        if not engine.report(original, self.rule, detail=notes, withheld=withheld):
            return updated
        if found.dual is not None:
            from codemods.rules.fsdp401.dual_code import dual_call

            dual_call(engine, found, conversion, original, root is not None)
            return updated
        home = TORCH_FSDP if engine.target_at_least("2.6") else COMPOSABLE_FSDP
        imports = ConversionImports(engine, original)
        for name in ("fully_shard", *conversion.keywords.imports):
            imports.need_import(home, name)
        for module, name in conversion.keywords.more_imports:
            if not imported_here(engine, original, module, name):
                imports.need_import(module, name)
        _forget_fsdp1_names(engine, original)
        for use in found.uses.get(id(original), ()):
            # Later in the same scope than this call: visited after it.
            engine.replace(use.call, use.replacement())
            for module, name in use.imports:
                imports.need_import(module, name)
        indent = indentation(engine, conversion.line)
        bindings, keywords, unit_keywords = bound_first(engine, conversion, indent)
        if root is not None:  # itself a unit of the root wrapped later
            keywords = as_unit(conversion, keywords)
        statements = statements_before(engine, conversion, indent, bindings, unit_keywords)
        if statements:
            engine.insert_before(conversion.line, spaced(engine, statements, conversion.line))
        imports.write()  # once the helpers the conversion wants are known
        one = engine.module.default_indent
        taken = len(indent + conversion.root + " = ")  # most often `model = fully_shard(...)`
        base = inner_indent(engine, original, indent)
        args = [conversion.root, *keywords]
        text = wrapped_call("fully_shard", args, one, "", taken + len(base), base, False)
        return cst.parse_expression(text, engine.module.config_for_parsing)

    def module(self, engine: Engine, node: cst.Module) -> None:
        """Rewrite the earlier bindings of the names converted calls pass (``mp = ...``).

        Those the conversion leaves dead (``policy = ModuleWrapPolicy({Block})``) go.

        They come before the call, so they are replaced as the visit leaves them: only
        where the call's fix applies, which :meth:`call` then reports the same way.
        """
        # The text test spares files without FSDP1's class a survey at the start (on
        # the text the pass read: generating the module's code again walks every node).
        if not engine.settings.enabled(self.rule):
            return
        if "FSDP" not in engine.text.upper():
            return
        from codemods.rules.fsdp401.companion import companion_detail
        from codemods.rules.fsdp401.dead import dead_bindings
        from codemods.rules.fsdp401.outcome import Conversion

        found = self._survey(engine)
        for call, why in found.subclass_calls:  # no call of FSDP1's class: said here
            engine.report(call, self.rule, fixable_here=False, detail=why)
        withheld = f"fix withheld: {found.blocker}" if found.blocker else None
        if found.dual is not None:
            # FSDP1 stays beside FSDP2: its bindings stay, FSDP2's imports come after the others.
            from codemods.rules.fsdp401.dual_code import dual_imports

            dual_imports(engine, self.rule, found, withheld)
            return
        if found.companion is not None:
            # No wrapper call of its own to carry the finding: its first rewrite does.
            detail = companion_detail(engine)
            engine.report(found.companion, self.rule, detail=detail, withheld=withheld)
        converted = tuple(c for c in found.conversions.values() if isinstance(c, Conversion))
        for conversion in converted:
            dead = dead_bindings(engine, conversion, converted)
            if not (conversion.keywords.rebindings or dead):
                continue
            if not engine.report(conversion.call, self.rule, quiet=True, withheld=withheld):
                continue
            for line in dead:  # bound for the FSDP1 call alone, which is gone
                engine.replace(line, cst.RemovalSentinel.REMOVE)
                _forget_fsdp1_names(engine, line)
            for rebinding in conversion.keywords.rebindings:
                engine.replace(rebinding.value, rebinding.replacement)
                if isinstance(rebinding.value, cst.Call):
                    engine.forget(rebinding.value.func)
        _remove_dead_entries(engine, self.rule, [c.call for c in converted], withheld)

    def _survey(self, engine: Engine) -> Survey:
        """The file's survey, made at the first hook that needs it (it sees the whole file)."""
        found = engine.scratch.get(self.rule.code)
        if found is None:
            from codemods.rules.fsdp401.decide import survey

            found = engine.scratch[self.rule.code] = survey(engine, self.rule.code)
        return found

    def function(self, engine: Engine, node: cst.FunctionDef | cst.Lambda) -> None:
        if not isinstance(node, cst.FunctionDef) or not engine.settings.enabled(self.rule):
            return
        annotations = [p.annotation for p in _parameters(node) if p.annotation is not None]
        annotations += [node.returns] if node.returns is not None else []
        if not annotations:
            return
        found = self._survey(engine)
        hits = [
            ref
            for annotation in annotations
            for ref in find_all(annotation, lambda n: id(n) in found.class_checks)
        ]
        if not hits or not found.converts() or not engine.report(hits[0], self.rule, quiet=True):
            return
        _use_fsdp_module(engine, hits)
        for hit in hits:
            engine.replace(hit, cst.Name("FSDPModule"))

    def ast_function(self, detector: Detector, node: Any) -> None:
        """Nothing to report: annotations change only with the file's wrapper calls."""

    def class_def(
        self, engine: Engine, original: cst.ClassDef, updated: cst.ClassDef
    ) -> cst.ClassDef:
        return updated  # module() reported the calls of an FSDP1 subclass

    def ast_class_def(self, detector: Detector, node: Any) -> None:
        """A subclass of FSDP1's class: its calls are found by the libcst survey."""
        if any(
            detector.qualified(on_ast.value(base)) & set(TORCH_FSDP_CLASSES) for base in node.bases
        ):
            raise Undecided("a subclass of FSDP1's class", self.rule.code)


def _remove_dead_entries(
    engine: Engine, rule: Rule, calls: list[cst.Call], withheld: str | None
) -> None:
    """The ``**kwargs`` dicts' entries the converted calls leave unread go, with their imports."""
    from codemods.rules.fsdp401.spread_dead import dead_entries, remove_dead

    for spread, fed in dead_entries(engine, calls):
        if all(engine.report(call, rule, quiet=True, withheld=withheld) for call in fed):
            for node in remove_dead(engine, spread, fed):
                _forget_fsdp1_names(engine, node)


def _parameters(node: cst.FunctionDef) -> list[cst.Param]:
    params = node.params
    star = [params.star_arg] if isinstance(params.star_arg, cst.Param) else []
    double = [params.star_kwarg] if params.star_kwarg is not None else []
    return [*params.posonly_params, *params.params, *star, *params.kwonly_params, *double]


def _use_fsdp_module(engine: Engine, replaced: list[cst.CSTNode]) -> None:
    """Import ``FSDPModule`` from FSDP2's home; the FSDP1 names replaced may go."""
    home = TORCH_FSDP if engine.target_at_least("2.6") else COMPOSABLE_FSDP
    engine.need_import(home, "FSDPModule")
    for node in replaced:
        engine.forget(node)


#: Where the FSDP1 bridge lives, and its name (:func:`compat.fsdp2.fully_shard_like_fsdp1`).
BRIDGE_HOME, BRIDGE = "compat.fsdp2", "fully_shard_like_fsdp1"
#: What a bridged call's finding says before its list of what is left to do by hand.
BRIDGED = "on compat's FSDP1 bridge; to finish by hand"


def _bridge(
    engine: Engine,
    rule: Rule,
    found: Survey,
    original: cst.Call,
    updated: cst.Call,
    bridged: Bridged,
) -> cst.BaseExpression:
    """The call as one call of the bridge, with the call's own arguments.

    The finding lists what kept it from plain FSDP2 code, each with its recipe.
    """
    withheld = f"fix withheld: {found.blocker}" if found.blocker else None
    detail = f"{BRIDGED}: {bridged.why}; {HAND_PORT}; {LEAVING_THE_BRIDGE}"
    if not engine.report(original, rule, detail=detail, withheld=withheld):
        return updated
    engine.need_import(BRIDGE_HOME, BRIDGE)
    engine.forget(original.func)
    for use in found.uses.get(id(original), ()):
        engine.replace(use.call, use.replacement())
        for module, name in use.imports:
            engine.need_import(module, name)
    return updated.with_changes(func=cst.Name(BRIDGE))


#: ``compat``'s home of FSDP1's class-level calls for bridged models.
API = "FSDP1Api"


def _api_call(
    engine: Engine, rule: Rule, found: Survey, original: cst.Call, updated: cst.Call
) -> cst.BaseExpression:
    """``FSDP.state_dict_type(model, ...)`` as ``FSDP1Api.state_dict_type(model, ...)``.

    The file's models are on the bridge (a call like this puts them there), whose
    ``FSDP1Api`` does FSDP1's call on them (and FSDP1's own on an FSDP1 model).
    """
    from codemods.rules.fsdp401.checkpoints import written

    if found.dual is not None:  # FSDP1's checkpoint code stays beside FSDP2's
        from codemods.rules.fsdp401.dual_code import dual_checkpoint

        chosen = dual_checkpoint(engine, rule, found, original, updated)
        if chosen is not None:
            return chosen
    if (plain := written(engine, rule, found.converts(), original, updated)) is not None:
        return plain  # checkpoint code with an FSDP2 form
    if id(original) not in found.api_calls or not found.converts():
        return updated
    if not engine.report(original, rule, quiet=True):
        return updated
    engine.need_import(BRIDGE_HOME, API)
    engine.forget(original.func)
    func = cst.Attribute(value=cst.Name(API), attr=updated.func.attr)
    return updated.with_changes(func=func)


def _module_listing(
    engine: Engine, rule: Rule, found: Survey, original: cst.Call, updated: cst.Call
) -> cst.BaseExpression:
    """``FSDP.fsdp_modules(model)`` as the ``FSDPModule`` instances in ``model.modules()``.

    FSDP1 lists the FSDP instances among the module and its descendants in that order;
    on FSDP2 those are the modules ``fully_shard`` was called on, which are
    ``FSDPModule`` instances.
    """
    if id(original) not in found.module_lists or not found.converts():
        return updated
    if not engine.report(original, rule, quiet=True):
        return updated
    var = fresh(engine, "submodule")
    target = engine.module.code_for_node(updated.args[0].value)
    text = f"[{var} for {var} in {target}.modules() if isinstance({var}, FSDPModule)]"
    if found.dual is not None:  # FSDP1's call stays beside it (no `unit.module` to follow)
        from codemods.rules.fsdp401.dual_code import flagged_listing

        return flagged_listing(engine, found.dual, text, original, updated)
    _use_fsdp_module(engine, [original.func])
    for wrapped in unit_modules(engine, original):  # in the loop's body: visited later
        engine.replace(wrapped, lambda updated: updated.value)
    return cst.parse_expression(text, engine.module.config_for_parsing)


def _class_check(
    engine: Engine, rule: Rule, found: Survey, original: cst.Call, updated: cst.Call
) -> cst.Call:
    """``isinstance(x, FSDP)`` as ``isinstance(x, FSDPModule)`` in a file that converts.

    Wherever the check stands (before the wrapper call too): the survey has seen the
    whole file. Its finding is the wrapper call's; this only says whether the fix applies.
    """
    if len(original.args) != 2 or not found.converts():
        return updated
    tested = original.args[1].value
    parts = [e.value for e in tested.elements] if isinstance(tested, cst.Tuple) else [tested]
    hits = [part for part in parts if id(part) in found.class_checks]
    if not hits or not engine.report(hits[0], rule, quiet=True):
        return updated
    if found.dual is not None:  # `FSDPModule if HAS_FSDP2 else FSDP`
        from codemods.rules.fsdp401.dual_code import flagged_class

        swap = flagged_class(engine, found.dual)
    else:
        _use_fsdp_module(engine, hits)

        def swap(old: cst.BaseExpression) -> cst.BaseExpression:
            return cst.Name("FSDPModule")

    value = updated.args[1].value
    if isinstance(value, cst.Tuple):
        elements = [
            element.with_changes(value=swap(element.value))
            if id(part) in found.class_checks
            else element
            for element, part in zip(value.elements, parts)
        ]
        value = value.with_changes(elements=elements)
    else:
        value = swap(value)
    return updated.with_changes(args=[updated.args[0], updated.args[1].with_changes(value=value)])


BEHAVIOUR = Fsdp401
