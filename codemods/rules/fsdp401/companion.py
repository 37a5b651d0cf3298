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

from codemods.rules.api import Engine
from codemods.rules.fsdp401.kept import BRIDGE_KEEPS
from codemods.rules.fsdp401.lookups import fsdp1_reference, line_of, source_order
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


def companion_blockers(engine: Engine, checks: frozenset[int], only: tuple[str, ...]) -> list[str]:
    """Why the file's checks cannot follow the project's models onto the bridge.

    Args:
        engine: The file's engine.
        checks: The class references ``isinstance`` tests (``id``).
        only: The attributes only an FSDP1 model has.
    """
    blockers = []
    refs = find_all(engine.module, lambda n: id(n) in checks)
    for ref in refs:
        found = branch_of(engine, ref)
        if found is None:
            continue
        subject, branch = found
        for node in find_all(branch.body, lambda n: isinstance(n, cst.Attribute)):
            attribute = node.attr.value
            if attribute in BRIDGE_KEEPS or attribute not in only:
                continue
            if engine.module.code_for_node(node.value) == subject:
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
    nodes = find_all(engine.module, lambda n: id(n) in rewritten)
    if not nodes and blocked:
        nodes = find_all(engine.module, lambda n: fsdp1_reference(engine, n))
    return min(nodes, key=lambda n: source_order(engine, n), default=None)
