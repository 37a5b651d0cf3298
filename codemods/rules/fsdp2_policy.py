"""The module classes an FSDP1 ``auto_wrap_policy`` names, read from source, for FSDP401.

FSDP1 makes every instance of the policy's classes (except the root, which is always
its own unit) an FSDP unit. The forms read here name their classes outright:
``ModuleWrapPolicy({A, B})``, ``partial(transformer_auto_wrap_policy,
transformer_layer_cls={A, B})``, a set, list or tuple of classes, or a name bound once
to one of these. Anything else (a size threshold, a lambda, a custom callable) picks
units only at run time: :func:`unit_classes` says so, with the runtime route.
"""

from __future__ import annotations

import libcst as cst

from codemods.kinds.base import PARTIAL, Engine
from codemods.registry.names import TORCH_WRAP
from codemods.rules.fsdp2_arguments import Untranslatable, bound_once
from codemods.syntax import keyword

RUNTIME_ROUTE = (
    "the policy names no module classes: list the unit classes, or apply it at run time "
    "with `compat.fsdp2.fully_shard_by_policy(model, policy, **fsdp1_arguments)`"
)


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
        if engine.class_set(element) is None:
            shown = engine.module.code_for_node(element)
            raise Untranslatable(f"`{shown}` in the policy is not certainly a class")
    return elements


def _is(engine: Engine, node: cst.BaseExpression, name: str) -> bool:
    return name in engine.qualified(node)


def unit_classes(engine: Engine, policy: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The classes whose instances ``policy`` makes units (empty for ``None``).

    Raises:
        Untranslatable: Where the policy does not name its classes in source.
    """
    if isinstance(policy, cst.Name) and policy.value == "None":
        return []
    value = bound_once(engine, policy) or policy
    if isinstance(value, (cst.Set, cst.List, cst.Tuple)):
        return _classes(engine, value)
    if not isinstance(value, cst.Call):
        raise Untranslatable(RUNTIME_ROUTE)
    args = value.args
    if _is(engine, value.func, f"{TORCH_WRAP}.ModuleWrapPolicy"):
        if len(args) == 1 and not args[0].star and keyword(args[0]) in (None, "module_classes"):
            return _classes(engine, args[0].value)
        raise Untranslatable(RUNTIME_ROUTE)
    if _is(engine, value.func, PARTIAL) and args and keyword(args[0]) is None:
        if _is(engine, args[0].value, f"{TORCH_WRAP}.transformer_auto_wrap_policy"):
            rest = args[1:]
            if len(rest) == 1 and keyword(rest[0]) == "transformer_layer_cls":
                return _classes(engine, rest[0].value)
    raise Untranslatable(RUNTIME_ROUTE)
