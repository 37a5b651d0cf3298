"""A file with FSDP1 checks but no wrapper call, converted with its project's calls.

A model crosses files: a training script wraps it, a checkpoint helper asks
``isinstance(model, FSDP)`` and calls ``FSDP.optim_state_dict(model, optim)`` on it.
Where every wrapper call of the project converts (:mod:`codemods.cli.project_fsdp1`
decides that before the run, and names them in
:attr:`codemods.settings.Settings.fsdp1_companion`), such a file converts with them: its
checks name ``FSDPModule``, its class calls ``compat``'s ``FSDP1Api``. Those calls go on
the bridge, whose model keeps FSDP1's methods (``clip_grad_norm_``, ``no_sync``,
``.module``, its state dicts): what a branch behind a check does with the model holds
there too. An FSDP1 attribute the bridge's model does not keep, used on the checked
model in that branch, keeps the project on FSDP1.
"""

from __future__ import annotations

from typing import Any

from codemods.rules.api import Engine
from codemods.rules.fsdp401.kept import BRIDGE_KEEPS
from codemods.rules.fsdp401.lookups import fsdp1_reference, in_module, line_of, source_order
from codemods.rules.fsdp401.values import shown
from codemods.syntax.cst_nodes import find_all
from codemods.syntax.lazy_libcst import cst

#: What a companion file's finding says before the wrapper calls it follows.
FOLLOWS = "the project's FSDP1 models become FSDP2 with"


def branch_of(engine: Engine, check: cst.CSTNode) -> tuple[str, cst.If] | None:
    """The tested name and the ``if`` whose body runs for it, for ``isinstance(x, FSDP)``.

    The check may be one operand of ``and``/``or``/``not`` in the ``if``'s test.
    """
    node: cst.CSTNode | None = check
    call = None
    while node is not None:
        parent = engine.parent(node)
        if isinstance(parent, cst.Call) and call is None:
            call = parent
        if isinstance(parent, cst.If) and parent.test is node:
            if call is None or not call.args:
                return None
            return engine.module.code_for_node(call.args[0].value), parent
        if not isinstance(
            parent, (cst.Call, cst.Arg, cst.Tuple, cst.Element, cst.BooleanOperation)
        ) and not isinstance(parent, cst.UnaryOperation):
            return None
        node = parent
    return None


def _annotated_parameter(engine: Engine, check: cst.CSTNode) -> tuple[str, cst.FunctionDef] | None:
    """The parameter and function, for ``def f(name: FSDP)`` (the class at ``check``)."""
    node: cst.CSTNode | None = check
    while node is not None and not isinstance(node, cst.Annotation):
        node = engine.parent(node)
    param = engine.parent(node) if node is not None else None
    if not isinstance(param, cst.Param):
        return None
    function = engine.parent(param)
    while function is not None and not isinstance(function, cst.FunctionDef):
        function = engine.parent(function)
    return (param.name.value, function) if function is not None else None


def reads_behind_checks(
    engine: Engine, checks: frozenset[int], attributes: tuple[str, ...]
) -> list[tuple[cst.Attribute, str]]:
    """The reads of ``attributes`` on a value the file takes for an FSDP1 model.

    Such a value is the subject of ``isinstance(x, FSDP)`` in the body of the ``if`` it
    tests, or a parameter annotated with FSDP1's class in its function's body: when the
    checks and annotations become ``FSDPModule``, the reads stay and find nothing there.

    Args:
        engine: The file's engine.
        checks: The class references ``isinstance`` tests and annotations name (``id``).
        attributes: The attributes only an FSDP1 model has (or that mean something else).

    Returns:
        Each read, with its attribute, in the order of the file.
    """
    found: dict[int, tuple[cst.Attribute, str]] = {}
    for ref in in_module(engine, lambda n: id(n) in checks):
        subject = branch_of(engine, ref) or _annotated_parameter(engine, ref)
        if subject is None:
            continue
        name, scope = subject
        for node in find_all(scope.body, lambda n: isinstance(n, cst.Attribute)):
            attribute = node.attr.value
            if attribute in attributes and engine.module.code_for_node(node.value) == name:
                found[id(node)] = (node, attribute)
    return sorted(found.values(), key=lambda read: source_order(engine, read[0]))


def companion_blockers(engine: Engine, checks: frozenset[int], only: tuple[str, ...]) -> list[str]:
    """Why the file's checks cannot follow the project's models onto the bridge.

    Args:
        engine: The file's engine.
        checks: The class references ``isinstance`` tests and annotations name (``id``).
        only: The attributes only an FSDP1 model has.
    """
    blockers = []
    for node, attribute in reads_behind_checks(engine, checks, only):
        if attribute not in BRIDGE_KEEPS:
            where = f"`{shown(engine, node)}` at line {line_of(engine, node)}"
            blockers.append(f"{where} exists only on FSDP1 models")
    return blockers


def companion_detail(engine: Engine) -> str:
    """The companion finding's detail: the wrapper calls the file follows."""
    sites = engine.settings.fsdp1_companion
    more = f" (and {len(sites) - 1} more)" if len(sites) > 1 else ""
    return f"{FOLLOWS} {sites[0]}{more}: its FSDP1 checks and class calls follow them"


def companion_anchor(engine: Engine, rewritten: set[int], blocked: bool) -> cst.CSTNode | None:
    """Where a companion's finding goes: its first rewrite (``id`` in ``rewritten``).

    Where nothing is rewritten but the file stays FSDP1 (``blocked``), its first FSDP1
    reference, so that a finding says why; None where neither is.
    """
    nodes = in_module(engine, lambda n: id(n) in rewritten)
    if not nodes and blocked:
        nodes = in_module(engine, lambda n: fsdp1_reference(engine, n))
    return min(nodes, key=lambda n: source_order(engine, n), default=None)


def note_tests(conversions: dict[int, Any], tests: tuple[str, ...]) -> None:
    """Name on each converted call the FSDP1 uses the project's tests keep on its models.

    They hold no code of the project's own (:mod:`codemods.cli.project_fsdp1`): the
    conversion says what they will answer.
    """
    if not tests:
        return
    more = f" (and {len(tests) - 1} more)" if len(tests) > 1 else ""
    note = (
        f"{tests[0]}{more} in the project's tests stays FSDP1: it does not answer for "
        "this model where a test gives it this model (port the test: `FSDPModule`, "
        "torch.distributed.checkpoint.state_dict)"
    )
    for conversion in conversions.values():
        notes = getattr(getattr(conversion, "keywords", None), "notes", None)
        if isinstance(notes, list):
            notes.append(note)
