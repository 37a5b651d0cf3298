"""The module classes an FSDP1 ``auto_wrap_policy`` names, read from source, for FSDP401.

FSDP1 makes every instance of the policy's classes (except the root, which is always
its own unit) an FSDP unit. The forms read here name their classes outright:
``ModuleWrapPolicy({A, B})``, ``partial(transformer_auto_wrap_policy,
transformer_layer_cls={A, B})``, a set, list or tuple of classes (or of names bound
once: a parameter, ``layer_cls = type(model.layers[0])``), or a name bound once
to one of these, or a call of a helper function of the same file that certainly returns
one of these (:func:`_helper_policy`). Anything else (a size threshold, a lambda, a
custom callable) picks units only at run time: :func:`unit_classes` says so, with the
runtime route.

The rewrite writes the class names where the model is wrapped, so each must mean there
what it means where the policy names it (no parameter or local shadowing it).
"""

from __future__ import annotations

from codemods.registry.names import TORCH_WRAP
from codemods.rules.api import PARTIAL, Engine
from codemods.rules.fsdp401.keywords import Untranslatable
from codemods.rules.fsdp401.values import assignment_of, bound_once, shown
from codemods.syntax.cst_nodes import dotted, find_all, keyword
from codemods.syntax.lazy_libcst import cst

RUNTIME_ROUTE = (
    "the policy names no module classes (FSDP1 picks the units at run time): list the "
    "classes of FSDP1's units (on the FSDP1 model: `{type(unit.module) for unit in "
    "FSDP.fsdp_modules(model)}`) and shard those, children before parents, the root last"
)


RUNTIME_UNITS = (
    "the policy picks the units at run time, by FSDP1's rules (`shard_like_fsdp1`: "
    "children first, the root last); a policy object that is not callable "
    "(`CustomPolicy`) raises `TypeError`, a container unit (`ModuleList`) raises in "
    "`fully_shard`, and with `mixed_precision` FSDP1 also made each `BatchNorm` a unit "
    "of its own kept in fp32, which this code does not"
)


class RuntimePolicy(Untranslatable):
    """The policy names no classes in source: its units are decided at run time.

    The rewrite then passes the policy itself to code that decides the units as FSDP1
    does (:mod:`codemods.rules.fsdp401.helpers`).
    """

    def __init__(self) -> None:
        super().__init__(RUNTIME_ROUTE)


def _classes(engine: Engine, node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The class expressions of a display, or of a name bound once to one."""
    node = bound_once(engine, node) or node
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value in ("set", "frozenset", "list", "tuple")
        and engine.qualified(node.func) == {f"builtins.{node.func.value}"}
        and len(node.args) == 1
        and not node.args[0].keyword
        and not node.args[0].star
    ):
        node = node.args[0].value  # `set([A, B])`
    if isinstance(node, (cst.Set, cst.List, cst.Tuple)):
        elements = [e.value for e in node.elements if isinstance(e, cst.Element)]
        if len(elements) != len(node.elements) or not elements:
            raise Untranslatable("the policy's classes are not a plain list of classes")
    else:
        raise Untranslatable("the policy's classes are not a set, list or tuple display")
    for element in elements:
        if engine.class_set(element) is None and not _one_value(engine, element):
            raise Untranslatable(
                f"`{shown(engine, element)}` in the policy is not certainly a class"
            )
    return elements


def _one_value(engine: Engine, node: cst.BaseExpression) -> bool:
    """Whether ``node`` is a name bound once, as a parameter or by ``name = value``.

    Real code often computes the unit class (``layer_cls = type(model.layers[0])``) or
    takes it as an argument. FSDP1's class policies test ``isinstance(module,
    tuple(classes))``, and the rewrite's loop tests ``isinstance(submodule, name)``
    with the same object (the name has one binding, and :func:`unit_classes` checks
    that it is that binding where the model is wrapped), so a value that is no class
    fails alike in both.
    """
    if not isinstance(node, cst.Name):
        return False
    scope = engine.scope(node)
    assignments = list(scope[node.value]) if scope is not None else []
    if len(assignments) != 1:
        return False
    if isinstance(getattr(assignments[0], "node", None), cst.Param):
        return True
    return bound_once(engine, node) is not None


def _is(engine: Engine, node: cst.BaseExpression, name: str) -> bool:
    return name in engine.qualified(node)


def _docstring(statement: cst.BaseSmallStatement) -> bool:
    return isinstance(statement, cst.Expr) and isinstance(
        statement.value, (cst.SimpleString, cst.ConcatenatedString)
    )


def _helper_policy(engine: Engine, call: cst.Call) -> cst.BaseExpression | None:
    """What ``call`` certainly returns, where it calls a straight-line helper of the file.

    The helper is a plain, undecorated function defined once at module level, whose body
    is a docstring, assignments to simple names and one final ``return``. The call's
    arguments must be free of calls: the rewrite drops the call, and them with it.
    """
    scope = engine.scope(call)
    if not isinstance(call.func, cst.Name) or scope is None:
        return None
    if any(find_all(arg.value, lambda n: isinstance(n, cst.Call)) for arg in call.args):
        return None
    assignments = list(scope[call.func.value])
    helper = getattr(assignments[0], "node", None) if len(assignments) == 1 else None
    if (
        not isinstance(helper, cst.FunctionDef)
        or helper.decorators
        or helper.asynchronous
        or not isinstance(engine.parent(helper), cst.Module)
        or not isinstance(helper.body, cst.IndentedBlock)
    ):
        return None
    statements = []
    for line in helper.body.body:
        if not isinstance(line, cst.SimpleStatementLine):
            return None  # a branch, a loop, a nested definition: not straight-line
        statements.extend(line.body)
    if statements and _docstring(statements[0]):
        statements = statements[1:]
    *assigns, last = statements or [None]
    for statement in assigns:
        if not (
            isinstance(statement, cst.Assign)
            and all(isinstance(t.target, cst.Name) for t in statement.targets)
        ):
            return None
    if not isinstance(last, cst.Return) or last.value is None:
        return None
    return bound_once(engine, last.value) or last.value


def _same_meaning(engine: Engine, element: cst.BaseExpression, site: cst.CSTNode) -> bool:
    """Whether the class ``element`` names resolves at ``site`` to the same binding."""
    name = dotted(element)
    here, there = engine.scope(element), engine.scope(site)
    if name is None or here is None or there is None:
        return False
    root = name.split(".")[0]
    bindings = set(here[root])
    return bool(bindings) and bindings == set(there[root])


def _policy_classes(engine: Engine, value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The classes a policy expression (resolved through one name) names."""
    if isinstance(value, (cst.Set, cst.List, cst.Tuple)):
        return _classes(engine, value)
    if not isinstance(value, cst.Call):
        raise RuntimePolicy()
    args = value.args
    classes = None
    if _is(engine, value.func, f"{TORCH_WRAP}.ModuleWrapPolicy"):
        if len(args) == 1 and not args[0].star and keyword(args[0]) in (None, "module_classes"):
            classes = args[0].value
    elif _is(engine, value.func, PARTIAL) and args and keyword(args[0]) is None:
        if _is(engine, args[0].value, f"{TORCH_WRAP}.transformer_auto_wrap_policy"):
            rest = args[1:]
            if len(rest) == 1 and keyword(rest[0]) == "transformer_layer_cls":
                classes = rest[0].value
    if classes is None:
        raise RuntimePolicy()
    try:
        return _classes(engine, classes)
    except Untranslatable:
        # Classes known only at run time (a variable, a config's): the policy object
        # itself is called as FSDP1 calls it, and picks the same units.
        raise RuntimePolicy() from None


def unit_classes(engine: Engine, policy: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The classes whose instances ``policy`` makes units (empty for ``None``).

    Raises:
        Untranslatable: Where the policy does not name its classes in source, or a class
            name would mean something else where the model is wrapped.
    """
    if isinstance(policy, cst.Name) and policy.value == "None":
        return []
    try:
        return _unit_classes(engine, policy)
    except RuntimePolicy:
        if _custom_policy(engine, policy):
            raise Untranslatable(
                "the policy may be a `CustomPolicy`, which FSDP1 runs by its private "
                "`_run_policy` and plain code cannot call: list the modules it picks (on "
                "the FSDP1 model: `FSDP.fsdp_modules(model)`) and shard those, children "
                "first, the root last"
            ) from None
        raise


def _custom_policy(engine: Engine, policy: cst.BaseExpression) -> bool:
    """Whether ``policy`` is, or a name of its scope is bound to, ``CustomPolicy(...)``."""
    values = [policy]
    scope = engine.scope(policy) if isinstance(policy, cst.Name) else None
    if scope is not None:
        for assignment in scope[policy.value]:
            statement = assignment_of(engine, getattr(assignment, "node", None))
            values += [statement.value] if statement is not None else []
    return any(
        isinstance(v, cst.Call) and _is(engine, v.func, f"{TORCH_WRAP}.CustomPolicy")
        for v in values
    )


def _unit_classes(engine: Engine, policy: cst.BaseExpression) -> list[cst.BaseExpression]:
    """:func:`unit_classes` for a policy that is not ``None``."""
    value = bound_once(engine, policy) or policy
    returned = _helper_policy(engine, value) if isinstance(value, cst.Call) else None
    if returned is None:
        classes = _policy_classes(engine, value)
    else:
        try:
            classes = _policy_classes(engine, returned)
        except Untranslatable:
            raise RuntimePolicy() from None  # as for any other callable
    for element in classes:
        if not _same_meaning(engine, element, policy):
            if returned is not None:
                raise RuntimePolicy()
            raise Untranslatable(
                f"`{shown(engine, element)}` means something else where the model is wrapped"
            )
    return classes
