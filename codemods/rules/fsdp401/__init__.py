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

A file is converted whole or not at all (:func:`survey`): one wrapper call the rewrite
cannot translate, or a use of the wrapped model that only FSDP1 has, withholds the fix
of every call in the file, and each finding says why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from codemods.registry import Rule
from codemods.registry.names import COMPOSABLE_FSDP, TORCH_FSDP, TORCH_FSDP_CLASSES
from codemods.rules.api import Behaviour, Detector, Engine
from codemods.rules.fsdp401.arguments import Keywords, Untranslatable, shown, translate
from codemods.rules.fsdp401.policy import unit_classes
from codemods.rules.fsdp401.uses import Use, rewrite
from codemods.rules.layout import LINE_LENGTH, indentation, wrapped_call
from codemods.syntax.cst_nodes import dotted, find_all, keyword
from codemods.syntax.gates import is_fallback
from codemods.syntax.lazy_libcst import cst

#: The builtin whose class argument FSDP2 spells ``FSDPModule``.
ISINSTANCE = "builtins.isinstance"
#: FSDP1's list of the FSDP modules under a module, by each spelling of the class.
FSDP_MODULES = tuple(f"{name}.fsdp_modules" for name in TORCH_FSDP_CLASSES)

#: Attributes of an FSDP1-wrapped model that an FSDP2 model does not have (or that mean
#: something else there): a file using one on the wrapped model is left as FSDP1.
FSDP1_ONLY = (
    "clip_grad_norm_",
    "no_sync",
    "summon_full_params",
    "module",
    "_fsdp_wrapped_module",
    "check_is_root",
    "sharding_strategy",
    "mixed_precision",
    "cpu_offload",
    "params",
)


#: Methods both have that mean something else on an FSDP2 model, and what to write.
CHANGED_MEANING = {
    "state_dict": (
        "FSDP1 gathers a full state dict, FSDP2 returns DTensor shards: use "
        "`get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))`"
    ),
    "load_state_dict": (
        "FSDP2 loads DTensor shards: use `set_model_state_dict(model, state, "
        "options=StateDictOptions(full_state_dict=True))`"
    ),
}


@dataclass(frozen=True)
class Conversion:
    """How one wrapper call becomes FSDP2.

    Attributes:
        call: The original wrapper call.
        line: The original statement line holding the call (the loop goes before it).
        root: Source of the module sharded last (a name or attribute).
        before: Source of a statement binding ``root`` first, if the call built it.
        classes: Source of each unit class (none: the root is the only unit).
        keywords: The ``fully_shard`` keywords.
    """

    call: cst.Call
    line: cst.SimpleStatementLine
    root: str
    before: str | None
    classes: tuple[str, ...]
    keywords: Keywords


@dataclass
class Survey:
    """Every FSDP1 wrapper call of a file, and why the file must stay FSDP1 (if it must).

    Attributes:
        conversions: Each wrapper call's conversion, or why it has none (by ``id``).
        uses: The calls on each wrapped model that are rewritten with it.
        blocker: Why no FSDP4 fix is written in the file, or None.
        module_lists: The ``FSDP.fsdp_modules(module)`` calls (``id``): a comprehension
            of the ``FSDPModule`` instances in ``module.modules()`` on FSDP2.
        class_checks: The FSDP1 classes ``isinstance`` tests or a function's annotations
            name (``id`` of the reference): ``FSDPModule`` on FSDP2, the class every
            ``fully_shard``-ed module takes on.
    """

    conversions: dict[int, Conversion | str]
    uses: dict[int, list[Use]]
    blocker: str | None
    class_checks: frozenset[int] = frozenset()
    module_lists: frozenset[int] = frozenset()

    def converts(self) -> bool:
        """Whether the file is converted (in a run that applies the family's fixes)."""
        return self.blocker is None and any(
            isinstance(c, Conversion) for c in self.conversions.values()
        )


def _line(engine: Engine, node: cst.CSTNode) -> int:
    return engine.position(node).start.line


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
    rest = args[1:]
    if any(arg.star or keyword(arg) is None for arg in rest):
        reasons.append("arguments passed by position or with `*`/`**`")
    named = [arg for arg in rest if keyword(arg) is not None]
    policies = [arg for arg in named if keyword(arg) == "auto_wrap_policy"]
    classes: list[cst.BaseExpression] = []
    keywords = None
    try:
        classes = unit_classes(engine, policies[0].value) if policies else []
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
            root = code(target) if target is not None and dotted(target) else _local(engine, call)
            before = f"{root} = {code(args[0].value)}"
    if reasons or line is None or keywords is None:
        raise Untranslatable(*reasons)
    return Conversion(call, line, root, before, tuple(code(c) for c in classes), keywords)


def _local(engine: Engine, node: cst.CSTNode) -> str:
    """A name for the module that nothing in ``node``'s scope uses (``model`` if free)."""
    scope = engine.scope(node)
    name = "model"
    while scope is not None and (name in scope or any(a.node for a in scope.accesses[name])):
        name += "_"
    return name


def _fsdp1_reference(engine: Engine, node: cst.CSTNode) -> bool:
    return isinstance(node, (cst.Name, cst.Attribute)) and bool(
        engine.qualified(node) & set(TORCH_FSDP_CLASSES)
    )


def _gated(engine: Engine, node: cst.CSTNode | None) -> bool:
    """Whether ``node`` is in an import fallback or a version-gated branch."""
    while node is not None:
        if is_fallback(node):
            return True
        node = engine.parent(node)
    return False


def _in_import(engine: Engine, node: cst.CSTNode | None) -> bool:
    while node is not None and not isinstance(node, cst.BaseStatement):
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            return True
        node = engine.parent(node)
    return False


def _use_of(
    engine: Engine, node: cst.Attribute, bound: dict[tuple[int, str], list[tuple[int, int]]]
) -> tuple[int, Use] | None:
    """The wrapper call whose result ``node``'s call is certainly on, and its rewrite."""
    call = engine.parent(node)
    if not isinstance(call, cst.Call) or call.func is not node or _gated(engine, call):
        return None  # a version-gated branch is not visited for rewriting: it stays FSDP1
    receiver = engine.module.code_for_node(node.value)
    line = _line(engine, node)
    before = [b for b in bound.get((id(engine.scope(node)), receiver), []) if b[0] < line]
    if not before:
        return None
    use = rewrite(engine, call, receiver)
    return None if use is None else (max(before)[1], use)


def survey(engine: Engine, rule_code: str) -> Survey:
    """Each FSDP1 wrapper call of the module: its conversion, or why it has none."""
    module = engine.module
    calls = [
        n
        for n in find_all(module, lambda n: isinstance(n, cst.Call))
        if _fsdp1_reference(engine, n.func)
    ]
    conversions: dict[int, Conversion | str] = {}
    uses: dict[int, list[Use]] = {}
    blockers = []
    wrapped = set()
    # (scope, name) -> (line, wrapper call) where a wrapper call's result is bound
    bound: dict[tuple[int, str], list[tuple[int, int]]] = {}
    # name -> (scope, line, in a loop) of each wrapper call that makes it FSDP
    sites: dict[str, list[tuple[Any, int, bool]]] = {}
    for call in calls:
        if _gated(engine, call) or engine.silenced(call, rule_code):
            blockers.append(f"the FSDP1 call at line {_line(engine, call)} is kept on purpose")
            continue
        try:
            conversion = _convert(engine, call)
        except Untranslatable as why:
            conversions[id(call)] = str(why)
            blockers.append(f"the FSDP1 call at line {_line(engine, call)} stays: {why}")
            continue
        conversions[id(call)] = conversion
        wrapped.add(conversion.root)
        site = (engine.scope(call), _line(engine, call), _in_loop(engine, call))
        sites.setdefault(conversion.root, []).append(site)
        statement = conversion.line.body[0]
        for target in getattr(statement, "targets", ()):
            name = module.code_for_node(target.target)
            wrapped.add(name)
            sites.setdefault(name, []).append(site)
            if getattr(statement, "value", None) is call:
                key = (id(engine.scope(call)), name)
                bound.setdefault(key, []).append((_line(engine, call), id(call)))
    funcs = {id(call.func) for call in calls}
    checks = set()
    lists = set()
    for node in find_all(module, lambda n: isinstance(n, (cst.Name, cst.Attribute))):
        if id(node) in funcs or _in_import(engine, node):
            continue
        if _fsdp1_reference(engine, node):
            if (_tested_class(engine, node) or _annotates(engine, node)) and not _gated(
                engine, node
            ):
                checks.add(id(node))
                continue
            listing = _module_list(engine, node)
            if listing is not None and not _gated(engine, node):
                lists.add(id(listing))
                continue
            text = shown(engine, node)
            blockers.append(f"`{text}` at line {_line(engine, node)} is FSDP1 only")
            continue
        if not isinstance(node, cst.Attribute) or module.code_for_node(node.value) not in wrapped:
            continue
        method = node.attr.value
        if method not in FSDP1_ONLY and method not in CHANGED_MEANING:
            continue
        if _before_wrapping(engine, node, sites[module.code_for_node(node.value)]):
            continue  # the plain module still: the same on FSDP1 and FSDP2
        found = _use_of(engine, node, bound)
        if found is not None:
            uses.setdefault(found[0], []).append(found[1])
            continue
        why = CHANGED_MEANING.get(method, "exists only on FSDP1 models")
        blockers.append(f"`{shown(engine, node)}` at line {_line(engine, node)}: {why}")
    if (checks or lists) and _fresh(engine, "FSDPModule") != "FSDPModule":
        blockers.append("`FSDPModule`, which FSDP2 code needs, is a name here")
    return Survey(
        conversions, uses, blockers[0] if blockers else None, frozenset(checks), frozenset(lists)
    )


def _in_loop(engine: Engine, node: cst.CSTNode) -> bool:
    """Whether ``node`` is in a ``for`` or ``while`` body of its own function or module."""
    node = engine.parent(node)
    while node is not None and not isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        if isinstance(node, (cst.For, cst.While)):
            return True
        node = engine.parent(node)
    return False


def _before_wrapping(
    engine: Engine, node: cst.Attribute, sites: list[tuple[Any, int, bool]]
) -> bool:
    """Whether ``node`` (``model.attr``) certainly runs before ``model`` is wrapped.

    That is where every wrapper call making ``model`` FSDP is in the same scope, on a
    later line and in no loop there: the code in between runs once, in order, so the
    use sees the plain module (loading weights before wrapping, in real scripts).
    """
    scope, line = engine.scope(node), _line(engine, node)
    return all(s is scope and line < at and not looped for s, at, looped in sites)


def _module_list(engine: Engine, node: cst.CSTNode) -> cst.Call | None:
    """The call ``node.fsdp_modules(module)`` where ``node`` is the FSDP1 class.

    Only the plain form: one positional module, no ``root_only`` (the roots have no
    FSDP2 counterpart one can list).
    """
    attribute = engine.parent(node)
    if not (isinstance(attribute, cst.Attribute) and attribute.value is node):
        return None
    call = engine.parent(attribute)
    if not (isinstance(call, cst.Call) and call.func is attribute):
        return None
    if attribute.attr.value != "fsdp_modules" or len(call.args) != 1:
        return None
    (arg,) = call.args
    return call if keyword(arg) in (None, "module") and not arg.star else None


def _annotates(engine: Engine, node: cst.CSTNode) -> bool:
    """Whether ``node`` is in the annotation of a function's parameter or return."""
    parent = engine.parent(node)
    while parent is not None and not isinstance(parent, (cst.Annotation, cst.BaseStatement)):
        parent = engine.parent(parent)
    if not isinstance(parent, cst.Annotation):
        return False
    owner = engine.parent(parent)
    return isinstance(owner, cst.Param) or (
        isinstance(owner, cst.FunctionDef) and owner.returns is parent
    )


def _tested_class(engine: Engine, node: cst.CSTNode) -> bool:
    """Whether ``node`` is the class of ``isinstance(x, node)``, alone or in a tuple."""
    parent = engine.parent(node)
    if isinstance(parent, cst.Element):
        display = engine.parent(parent)
        if not isinstance(display, cst.Tuple):
            return False
        node, parent = display, engine.parent(display)
    if not (isinstance(parent, cst.Arg) and parent.value is node and not parent.star):
        return False
    call = engine.parent(parent)
    return (
        isinstance(call, cst.Call)
        and len(call.args) == 2
        and call.args[1] is parent
        and keyword(parent) is None
        and ISINSTANCE in engine.qualified(call.func)
    )


def _forget_fsdp1_names(engine: Engine, call: cst.Call) -> None:
    """Queue the imports the removed FSDP1 call used for removal where now unused."""
    for node in find_all(call, lambda n: isinstance(n, (cst.Name, cst.Attribute))):
        names = engine.qualified(node)
        if any(n.startswith(f"{TORCH_FSDP}.") or n == "functools.partial" for n in names):
            engine.forget(node)


def _fresh(engine: Engine, wanted: str) -> str:
    used = engine.scratch.get("FSDP401-names")
    if used is None:
        nodes = find_all(engine.module, lambda n: isinstance(n, cst.Name))
        used = engine.scratch["FSDP401-names"] = {n.value for n in nodes}
    while wanted in used:
        wanted += "_"
    return wanted


#: A keyword value written as it is at every ``fully_shard`` call: a name, an attribute
#: chain or a constant; anything else is bound to a name before the loop.
_PLAIN_VALUE = re.compile(r"[A-Za-z_][\w.]*|-?\d+(\.\d*)?|'[^'\\]*'|\"[^\"\\]*\"")


def _bound_first(
    engine: Engine, conversion: Conversion, indent: str
) -> tuple[list[str], list[str]]:
    """The statements binding the loop's computed keyword values, and the keywords.

    FSDP1 evaluates each argument once; the loop calls ``fully_shard`` once per unit,
    so a value that is more than a name or a constant (``MixedPrecisionPolicy(...)``)
    is bound to a name first, in the arguments' order, as FSDP2 code usually shares
    one policy object: evaluated once, as before, and written once.
    """
    keywords = conversion.keywords.code
    if not conversion.classes:
        return [], keywords  # one call: each value is evaluated once as it is
    bindings, out = [], []
    for text in keywords:
        name, _, value = text.partition("=")
        if _PLAIN_VALUE.fullmatch(value):
            out.append(text)
            continue
        var = _fresh(engine, name)
        bindings.append(f"{var} = {_laid_out(engine, value, indent, len(var) + 3)}")
        out.append(f"{name}={var}")
    return bindings, out


def _laid_out(engine: Engine, value: str, indent: str, taken: int) -> str:
    """A call's source on more lines where its line would be long (else as it is)."""
    if len(indent) + taken + len(value) <= LINE_LENGTH or "\n" in value:
        return value
    call = cst.parse_expression(value, engine.module.config_for_parsing)
    if not isinstance(call, cst.Call):
        return value
    code = engine.module.code_for_node
    args = [code(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for arg in call.args]
    return wrapped_call(code(call.func), args, engine.module.default_indent, indent, taken)


def _statements(
    engine: Engine, conversion: Conversion, indent: str, bindings: list[str], keywords: list[str]
) -> list[cst.CSTNode]:
    config = engine.module.config_for_parsing
    out = []
    if conversion.before:
        out.append(cst.parse_statement(f"{conversion.before}\n", config))
    for binding in bindings:
        out.append(cst.parse_statement(f"{binding}\n", config))
    if conversion.classes:
        one = engine.module.default_indent
        var = _fresh(engine, "submodule")
        classes = conversion.classes
        kinds = classes[0] if len(classes) == 1 else f"({', '.join(classes)})"
        root = conversion.root
        if len(indent + one * 2 + f"if isinstance({var}, {kinds}):") > LINE_LENGTH:
            # Many classes: named once before the loop, one a line, as formatters do.
            kinds = _fresh(engine, "unit_classes")
            listed = "".join(f"{one}{name},\n" for name in classes)
            out.append(cst.parse_statement(f"{kinds} = (\n{listed})\n", config))
        shard = wrapped_call(
            "fully_shard", [var, *keywords], one, "", len(indent + one * 2), one * 2, False
        )
        tests = [f"isinstance({var}, {kinds})", f"{var} is not {root}"]
        loop = (
            f"for {var} in reversed(list({root}.modules())):  # descendants before ancestors\n"
            f"{one}{_condition(tests, one, one, len(indent + one))}\n"
            f"{one}{one}{shard}\n"
        )
        out.append(cst.parse_statement(loop, config))
    return out


def _condition(tests: list[str], base: str, one: str, taken: int = 0) -> str:
    """``if a and b:``, one test a line (as formatters do) where one line would be long.

    ``base`` is the indentation of the ``if`` relative to the statement being built
    (libcst adds the block's own); ``taken`` is the length of its real indentation.

    Example:
        >>> _condition(["a", "b"], "    ", "    ")
        'if a and b:'
        >>> print(_condition(["x" * 50, "y" * 50], "    ", "    "))
        if (
                xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
                and yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy
            ):
    """
    flat = f"if {' and '.join(tests)}:"
    if taken + len(flat) <= LINE_LENGTH:
        return flat
    inner = f"\n{base}{one}and ".join(tests)
    return f"if (\n{base}{one}{inner}\n{base}):"


class Fsdp401(Behaviour):
    """Rewrite each FSDP1 wrapper call when every one in the file can be rewritten."""

    definitions = True  # a function's annotations naming the FSDP1 class
    modules = True  # earlier bindings of a precision the call passes

    def calls(self) -> tuple[str, ...]:
        return (*TORCH_FSDP_CLASSES, ISINSTANCE, *FSDP_MODULES)

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if not engine.settings.enabled(self.rule):
            return updated
        found = self._survey(engine)
        called = engine.qualified(original.func)
        if ISINSTANCE in called:
            return _class_check(engine, self.rule, found, original, updated)
        if called & set(FSDP_MODULES):
            return _module_listing(engine, self.rule, found, original, updated)
        conversion = found.conversions.get(id(original))
        if conversion is None:
            return updated
        if isinstance(conversion, str):
            engine.report(original, self.rule, fixable_here=False, detail=conversion)
            return updated
        notes = "; ".join(conversion.keywords.notes) or None
        withheld = f"fix withheld: {found.blocker}" if found.blocker else None
        if not engine.report(original, self.rule, detail=notes, withheld=withheld):
            return updated
        home = TORCH_FSDP if engine.target_at_least("2.6") else COMPOSABLE_FSDP
        for name in ("fully_shard", *conversion.keywords.imports):
            engine.need_import(home, name)
        _forget_fsdp1_names(engine, original)
        for use in found.uses.get(id(original), ()):
            # Later in the same scope than this call: visited after it.
            engine.replace(use.call, use.replacement())
            for module, name in use.imports:
                engine.need_import(module, name)
        indent = indentation(engine, conversion.line)
        bindings, keywords = _bound_first(engine, conversion, indent)
        statements = _statements(engine, conversion, indent, bindings, keywords)
        if statements:
            engine.insert_before(conversion.line, statements)
        one = engine.module.default_indent
        taken = len(indent + conversion.root + " = ")  # most often `model = fully_shard(...)`
        text = wrapped_call("fully_shard", [conversion.root, *keywords], one, "", taken, "", False)
        return cst.parse_expression(text, engine.module.config_for_parsing)

    def module(self, engine: Engine, node: cst.Module) -> None:
        """Rewrite the earlier bindings of the names converted calls pass (``mp = ...``).

        They come before the call, so they are replaced as the visit leaves them: only
        where the call's fix applies, which :meth:`call` then reports the same way.
        """
        # The text test spares files that pass no precision a survey at the start.
        if not engine.settings.enabled(self.rule) or "mixed_precision" not in node.code:
            return
        found = self._survey(engine)
        withheld = f"fix withheld: {found.blocker}" if found.blocker else None
        for conversion in found.conversions.values():
            if not isinstance(conversion, Conversion) or not conversion.keywords.rebindings:
                continue
            if not engine.report(conversion.call, self.rule, quiet=True, withheld=withheld):
                continue
            for rebinding in conversion.keywords.rebindings:
                engine.replace(rebinding.value, rebinding.replacement)
                if isinstance(rebinding.value, cst.Call):
                    engine.forget(rebinding.value.func)

    def _survey(self, engine: Engine) -> Survey:
        """The file's survey, made at the first hook that needs it (it sees the whole file)."""
        found = engine.scratch.get(self.rule.code)
        if found is None:
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
    _use_fsdp_module(engine, [original.func])
    var = _fresh(engine, "submodule")
    target = engine.module.code_for_node(updated.args[0].value)
    text = f"[{var} for {var} in {target}.modules() if isinstance({var}, FSDPModule)]"
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
    _use_fsdp_module(engine, hits)
    new = cst.Name("FSDPModule")
    value = updated.args[1].value
    if isinstance(value, cst.Tuple):
        elements = [
            element.with_changes(value=new) if id(part) in found.class_checks else element
            for element, part in zip(value.elements, parts)
        ]
        value = value.with_changes(elements=elements)
    else:
        value = new
    return updated.with_changes(args=[updated.args[0], updated.args[1].with_changes(value=value)])


BEHAVIOUR = Fsdp401
