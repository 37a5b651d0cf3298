"""An FSDP1 wrapper call's arguments by name, for FSDP401: by position and ``**kwargs``.

FSDP401 translates keywords. This module reads the other ways a call passes them:

- by position, by FSDP1's own order (:data:`FSDP1_ORDER`, the same in every torch
  release from 1.12 to 2.13; torch 1.11 had ``cpu_offload`` third);
- ``**name`` where ``name`` is a dict built in the call's own function: a display with
  constant string keys or ``dict(key=value)``, perhaps given more constant keys before
  the call (``name["key"] = value``, ``name.update(key=value)``), never rebound, passed
  elsewhere before the call, aliased or captured. Each key then reads as a keyword: its
  value as written where it is set once, on every path to the call, with a value that
  evaluating again gives again (a name not rebound later, a constant, FSDP1's
  configuration objects); otherwise the value the dict holds at the call,
  ``name["key"]``, or ``name.get("key")`` for a key set on some paths only (for the
  keywords whose ``None`` is FSDP1's default in the translation). The dual stack's
  FSDP1 branch passes the dict as built; in plain code the entries no longer read go
  (:mod:`codemods.rules.fsdp401.spread_dead`).

Anything else (an attribute's dict, a parameter's, the value some function returns,
``*args``) is unknown statically: the call stays FSDP1 and its finding says exactly that.
"""

from __future__ import annotations

from typing import Any

from codemods.rules.api import Engine
from codemods.rules.fsdp401.dead import pure_configuration
from codemods.rules.fsdp401.keywords import Untranslatable
from codemods.rules.fsdp401.lookups import line_of
from codemods.rules.fsdp401.paths import enclosing_loop, exclusive, inside, on_every_path
from codemods.rules.fsdp401.spread_dead import SPREADS, Spread
from codemods.rules.fsdp401.values import assignment_of, shown
from codemods.syntax.cst_nodes import find_all, keyword, literal
from codemods.syntax.lazy_libcst import cst

#: FSDP1's parameters after ``module``, in order: torch 1.12 to 2.13 (``use_orig_params``
#: from 2.0, then ``ignored_parameters`` on 2.0 and ``ignored_states`` from 2.1, and
#: ``device_mesh`` from 2.2).
FSDP1_ORDER = (
    "process_group",
    "sharding_strategy",
    "cpu_offload",
    "auto_wrap_policy",
    "backward_prefetch",
    "mixed_precision",
    "ignored_modules",
    "param_init_fn",
    "device_id",
    "sync_module_states",
    "forward_prefetch",
    "limit_all_gathers",
    "use_orig_params",
    "ignored_states",
    "device_mesh",
)
#: The keywords a key set on some paths only may pass as ``name.get("key")``: FSDP401's
#: translation of each reads ``None`` as FSDP1's default for it.
NONE_IS_DEFAULT = (
    "sharding_strategy",
    "backward_prefetch",
    "forward_prefetch",
    "sync_module_states",
    "limit_all_gathers",
    "use_orig_params",
    "device_mesh",
)
#: Calls that only read a dict passed to them (a log line of the keywords).
_READERS = ("print", "len", "repr", "str")
#: The dict's methods that only read it.
_READ_METHODS = ("get", "keys", "values", "items", "copy")
UNKNOWN = "keywords unknown statically"


def named_arguments(engine: Engine, call: cst.Call, rest: list[cst.Arg]) -> list[cst.Arg]:
    """``rest`` (the call's arguments after the module) with every argument named.

    Raises:
        Untranslatable: Where an argument's name or value cannot be known exactly.
    """
    out: list[cst.Arg] = []
    reasons: list[str] = []
    for index, arg in enumerate(rest):
        try:
            if arg.star == "**":
                out += _spread(engine, call, arg.value)
            elif arg.star == "*":
                raise Untranslatable(f"`*{shown(engine, arg.value)}`: {_origin(engine, arg.value)}")
            elif keyword(arg) is None:
                out.append(_positional(engine, index, arg))
            else:
                out.append(arg)
        except Untranslatable as why:
            reasons += why.reasons
    names = [keyword(arg) for arg in out]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:  # FSDP1 itself raises TypeError on such a call
        reasons.append(f"`{twice[0]}` is passed twice")
    if reasons:
        raise Untranslatable(*reasons)
    return out


def _positional(engine: Engine, index: int, arg: cst.Arg) -> cst.Arg:
    """A positional argument as FSDP1's keyword of its place."""
    if index >= len(FSDP1_ORDER):
        raise Untranslatable("more positional arguments than FSDP1 takes")
    name = FSDP1_ORDER[index]
    if index >= 1 and not engine.target_at_least("1.12"):
        raise Untranslatable(
            f"`{name}` passed by position: torch 1.11 read the arguments after "
            "`process_group` in another order; pass them by keyword"
        )
    return arg.with_changes(keyword=cst.Name(name), equal=cst.AssignEqual(), star="")


def _origin(engine: Engine, node: cst.BaseExpression) -> str:
    """Where the values of ``*node`` / ``**node`` come from, as a reason ends."""
    if not isinstance(node, cst.Name):
        return f"read from `{shown(engine, node)}`, set elsewhere: {UNKNOWN}"
    assignments = _reaching(engine, engine.scope(node), node.value, node)
    if len(assignments) > 1:
        return f"`{node.value}` is bound more than once: {UNKNOWN}"
    target = getattr(assignments[0], "node", None) if assignments else None
    if isinstance(target, cst.Param):
        owner = assignments[0].scope.node
        where = f"`{owner.name.value}`" if isinstance(owner, cst.FunctionDef) else "a function"
        params = owner.params if isinstance(owner, cst.FunctionDef) else None
        if params is not None and target in (params.star_arg, params.star_kwarg):
            return f"the arguments {where} was called with, passed on: {UNKNOWN}"
        return f"a parameter of {where}, given by its callers: {UNKNOWN}"
    statement = target
    while statement is not None and not isinstance(
        statement, (cst.Assign, cst.AnnAssign, cst.For, cst.With, cst.Import, cst.ImportFrom)
    ):
        statement = engine.parent(statement)
    value = getattr(statement, "value", None)
    if isinstance(value, cst.Call):
        built = f"`{shown(engine, value.func)}(...)`"
        return f"built by {built} at line {line_of(engine, value)}: {UNKNOWN}"
    return f"not a dict built where the call is: {UNKNOWN}"


def _spread(engine: Engine, call: cst.Call, node: cst.BaseExpression) -> list[cst.Arg]:
    """``**node``'s keys as keyword arguments (see the module's docstring)."""
    scope = engine.scope(call)
    found = _the_dict(engine, scope, node)
    if found is None:
        raise Untranslatable(f"`**{shown(engine, node)}`: {_origin(engine, node)}")
    binding, display = found
    name = node.value
    call_line = line_of(engine, call)
    entries: dict[str, list[tuple[cst.BaseExpression, cst.CSTNode]]] = {}
    for key, value in _items(engine, display):
        entries.setdefault(key, []).append((value, binding))
    loop = enclosing_loop(engine, call, scope)
    passes, others = {id(call)}, False
    for access in _references(engine, scope, name, call):
        use = access.node
        if use is node:
            continue
        passing = _passing(engine, use)
        if passing is not None:
            passes.add(id(passing))
        elif _setting(engine, use, name) is None:
            others = True  # read by a log line, changed after the call, ...
        where = f"`{name}` at line {line_of(engine, use)}"
        if engine.scope(use) is not scope:
            raise Untranslatable(f"{where} is read by a nested function: {UNKNOWN}")
        after = line_of(engine, use) > call_line
        if after and (loop is None or not inside(engine, use, loop)):
            continue  # changed after FSDP1 took its keywords: nothing it sees
        if after and not _only_read(engine, use):
            raise Untranslatable(
                f"{where} changes the dict after the call, in a loop that calls again: {UNKNOWN}"
            )
        set_here = _setting(engine, use, name)
        if set_here is not None:
            statement, items = set_here
            for key, value in items:
                entries.setdefault(key, []).append((value, statement))
            continue
        if not _only_read(engine, use):
            raise Untranslatable(f"{_user(engine, use)} may change `{name}` first: {UNKNOWN}")
    out, static = [], []
    for key, sets in entries.items():
        arg = _keyword(engine, call, name, key, sets, binding)
        out.append(arg)
        if arg.value is sets[0][0]:  # written from its value: the dict's entry is not read
            static.append(sets[0])
    runtime = len(static) < len(entries)
    spread = Spread(binding, tuple(static), runtime, others, frozenset(passes))
    engine.scratch.setdefault(SPREADS, {})[id(call)] = spread
    return out


def _passing(engine: Engine, use: cst.Name) -> cst.Call | None:
    """The call ``use`` is unpacked into (``f(**use)``), if that is what it is."""
    parent = engine.parent(use)
    if isinstance(parent, cst.Arg) and parent.star == "**" and parent.value is use:
        return engine.parent(parent)
    return None


def _the_dict(engine: Engine, scope: Any, node: cst.BaseExpression) -> Any:
    """``(statement, value)`` binding ``node`` once in ``scope`` to a dict it builds, or None."""
    if not isinstance(node, cst.Name) or scope is None:
        return None
    assignments = _reaching(engine, scope, node.value, node)
    if len(assignments) != 1 or assignments[0].scope is not scope:
        return None
    statement = assignment_of(engine, assignments[0].node)
    if statement is None:
        return None
    value = statement.value
    if isinstance(value, cst.Dict) and all(
        isinstance(e, cst.DictElement) and isinstance(literal(e.key), str) for e in value.elements
    ):
        return statement, value
    if (
        isinstance(value, cst.Call)
        and "builtins.dict" in engine.qualified(value.func)
        and all(keyword(arg) is not None for arg in value.args)
    ):
        return statement, value
    return None


def _items(engine: Engine, value: cst.CSTNode) -> list[tuple[str, cst.BaseExpression]]:
    """The constant keys and the value nodes a dict display or ``dict(...)`` sets."""
    if isinstance(value, cst.Dict):
        return [(literal(e.key), e.value) for e in value.elements]
    return [(keyword(arg), arg.value) for arg in value.args]


def _references(engine: Engine, scope: Any, name: str, call: cst.Call) -> list[Any]:
    """Every read of the binding of ``name`` the call sees, but in branches it never runs."""
    (assignment,) = _reaching(engine, scope, name, call)
    found = [a for a in assignment.references if not exclusive(engine, a.node, call)]
    return sorted(found, key=lambda a: line_of(engine, a.node))


def _reaching(engine: Engine, scope: Any, name: str, node: cst.CSTNode) -> list[Any]:
    """The bindings of ``name`` visible at ``node``, but those in branches exclusive of it.

    ``if ddp: kwargs = ... elif fsdp: kwargs = {...}; FSDP(model, **kwargs)``: the
    call sees the ``fsdp`` branch's dict only.
    """
    found = []
    for assignment in scope[name] if scope is not None else ():
        target = getattr(assignment, "node", None)
        if not (isinstance(target, cst.CSTNode) and exclusive(engine, target, node)):
            found.append(assignment)
    return found


def _setting(engine: Engine, use: cst.Name, name: str) -> Any:
    """``(statement, items)`` where ``use`` sets constant keys (``d["k"] = v``, ``d.update``)."""
    parent = engine.parent(use)
    if isinstance(parent, cst.Subscript) and len(parent.slice) == 1:
        key = parent.slice[0].slice
        target = engine.parent(parent)
        statement = engine.parent(target) if isinstance(target, cst.AssignTarget) else None
        if (
            isinstance(statement, cst.Assign)
            and len(statement.targets) == 1
            and isinstance(key, cst.Index)
            and isinstance(literal(key.value), str)
        ):
            return statement, [(literal(key.value), statement.value)]
        if isinstance(target, cst.AssignTarget) or isinstance(statement, cst.Assign):
            raise Untranslatable(f"`{shown(engine, parent)} = ...` sets a key: {UNKNOWN}")
        return None
    if isinstance(parent, cst.Attribute) and parent.attr.value == "update":
        update = engine.parent(parent)
        if isinstance(update, cst.Call) and isinstance(engine.parent(update), cst.Expr):
            if all(keyword(arg) is not None for arg in update.args):
                return update, [(keyword(arg), arg.value) for arg in update.args]
            if len(update.args) == 1 and isinstance(update.args[0].value, cst.Dict):
                display = update.args[0].value
                if all(
                    isinstance(e, cst.DictElement) and isinstance(literal(e.key), str)
                    for e in display.elements
                ):
                    return update, _items(engine, display)
        raise Untranslatable(f"`{name}.update(...)` at line {line_of(engine, use)}: {UNKNOWN}")
    return None


def _user(engine: Engine, use: cst.Name) -> str:
    """``use``'s smallest enclosing call or statement, quoted with its line."""
    node: cst.CSTNode = use
    while not isinstance(node, (cst.Call, cst.BaseSmallStatement, cst.BaseCompoundStatement)):
        node = engine.parent(node)
    if isinstance(node, cst.BaseCompoundStatement):
        node = use
    return f"`{shown(engine, node)}` at line {line_of(engine, use)}"


def _only_read(engine: Engine, use: cst.Name) -> bool:
    """Whether ``use`` only reads the dict (a key, ``.get``, ``in``, a log line)."""
    parent = engine.parent(use)
    if isinstance(parent, cst.Subscript):
        return not isinstance(engine.parent(parent), (cst.AssignTarget, cst.AugAssign, cst.Del))
    if isinstance(parent, cst.Attribute) and parent.attr.value in _READ_METHODS:
        return True
    if isinstance(parent, cst.Comparison):
        return True
    if isinstance(parent, cst.FormattedStringExpression):
        return True
    if isinstance(parent, cst.Arg) and parent.star == "**":
        return True  # unpacked into another call's keywords: a copy
    if isinstance(parent, cst.Arg) and parent.star == "":
        reader = engine.parent(parent)
        return isinstance(reader, cst.Call) and bool(
            engine.qualified(reader.func) & {f"builtins.{n}" for n in _READERS}
        )
    return False


def _keyword(
    engine: Engine,
    call: cst.Call,
    name: str,
    key: str,
    sets: list[tuple[cst.BaseExpression, cst.CSTNode]],
    binding: cst.CSTNode,
) -> cst.Arg:
    """The keyword argument the key ``key`` of the dict ``name`` passes."""
    always = any(where is binding or on_every_path(engine, where, call) for _, where in sets)
    if len(sets) == 1 and always and _stable(engine, sets[0][0], sets[0][1], call):
        return cst.Arg(keyword=cst.Name(key), value=sets[0][0], equal=cst.AssignEqual())
    quoted = f'"{key}"' if key.isidentifier() else repr(key)
    if always:
        read = f"{name}[{quoted}]"
    elif key in NONE_IS_DEFAULT:
        read = f"{name}.get({quoted})"
    else:
        lines = ", ".join(str(line_of(engine, where)) for _, where in sets)
        raise Untranslatable(
            f"`{key}` is set in `{name}` on some paths only (line {lines}): pass it on every "
            "path, or by keyword"
        )
    value = cst.parse_expression(read, engine.module.config_for_parsing)
    return cst.Arg(keyword=cst.Name(key), value=value, equal=cst.AssignEqual())


def _stable(engine: Engine, value: cst.BaseExpression, where: cst.CSTNode, call: cst.Call) -> bool:
    """Whether ``value``, written again at the call, gives what the dict holds.

    FSDP1's configuration objects and constants, and names no later line rebinds.
    """
    if not pure_configuration(engine, value):
        return False
    scope = engine.scope(call)
    set_at = line_of(engine, where)
    for node in find_all(value, lambda n: isinstance(n, cst.Name)):
        parent = engine.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            continue
        for assignment in scope[node.value] if scope is not None else ():
            target = getattr(assignment, "node", None)  # none for a builtin
            if isinstance(target, cst.CSTNode) and line_of(engine, target) >= set_at:
                return False
    return True
