"""What FSDP401 asks about where a node of the file stands, and which names are free.

Whether a reference is to torch's FSDP1 class and where it stands (the class an
``isinstance`` tests, an annotation, an ``fsdp_modules`` call), whether code is gated,
in an import or in a loop, whether a use runs before the model is wrapped; and names
that new code may bind.
"""

from __future__ import annotations

from typing import Any

from codemods.registry.names import COMPOSABLE_FSDP, TORCH_FSDP, TORCH_FSDP_CLASSES
from codemods.rules.api import Engine
from codemods.syntax.cst_nodes import find_all, keyword
from codemods.syntax.gate_releases import cst_gate_ceiling
from codemods.syntax.gates import fallback_regions, is_fallback
from codemods.syntax.lazy_libcst import cst

#: The builtin whose class argument FSDP2 spells ``FSDPModule``.
ISINSTANCE = "builtins.isinstance"


def line_of(engine: Engine, node: cst.CSTNode) -> int:
    """The line an original node starts on."""
    return engine.position(node).start.line


def local_name(engine: Engine, node: cst.CSTNode) -> str:
    """A name for the module that nothing in ``node``'s scope uses (``model`` if free)."""
    scope = engine.scope(node)
    name = "model"
    while scope is not None and (name in scope or any(a.node for a in scope.accesses[name])):
        name += "_"
    return name


def fsdp1_reference(engine: Engine, node: cst.CSTNode) -> bool:
    """Whether ``node`` is a name or attribute that refers to torch's FSDP1 class."""
    return isinstance(node, (cst.Name, cst.Attribute)) and bool(
        engine.qualified(node) & set(TORCH_FSDP_CLASSES)
    )


def gated(engine: Engine, node: cst.CSTNode | None) -> bool:
    """Whether ``node`` is in an import fallback or a version gate's older branch."""
    while node is not None:
        parent = engine.parent(node)
        if is_fallback(node) or (
            parent is not None and any(region is node for region in fallback_regions(parent))
        ):
            return True
        node = parent
    return False


#: The oldest torch with FSDP2 (``torch.distributed._composable.fsdp.fully_shard``): the
#: converted code never runs on an older one.
FSDP2_FIRST = (2, 4)


def before_fsdp2(engine: Engine, node: cst.CSTNode) -> bool:
    """Whether ``node`` only runs on a torch without FSDP2: a torch gate's older branch.

    ``if version.parse(torch.__version__) < version.parse("2.1"):`` holds FSDP1 code that
    a converted file never reaches, so it is left as it is and stands in no way.
    """
    ceiling = cst_gate_ceiling(engine.parent, node)
    return ceiling is not None and ceiling <= FSDP2_FIRST


def in_import(engine: Engine, node: cst.CSTNode | None) -> bool:
    """Whether ``node`` is part of an import statement."""
    while node is not None and not isinstance(node, cst.BaseStatement):
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            return True
        node = engine.parent(node)
    return False


def in_loop(engine: Engine, node: cst.CSTNode) -> bool:
    """Whether ``node`` is in a ``for`` or ``while`` body of its own function or module."""
    node = engine.parent(node)
    while node is not None and not isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        if isinstance(node, (cst.For, cst.While)):
            return True
        node = engine.parent(node)
    return False


def before_wrapping(
    engine: Engine,
    node: cst.Attribute,
    sites: list[tuple[Any, ...]],
    wrapped: frozenset[str] = frozenset(),
) -> bool:
    """Whether ``node`` (``model.attr``) certainly runs before ``model`` is wrapped.

    That is where every wrapper call making ``model`` FSDP is in the same scope, on a
    later line and in no loop there: the code in between runs once, in order, so the
    use sees the plain module (loading weights before wrapping, in real scripts). For a
    function's own variable wrapped in that function, only the wrapper calls (and
    followed results) of that function count.
    """
    scope, line = engine.scope(node), line_of(engine, node)
    if _local_name(engine, node.value, scope):
        # A function's own variable: a wrapper call of another function binds another
        # variable of the same name (`model = FSDP(model)` in a setup function).
        if any(site[0] is scope for site in sites):
            sites = [site for site in sites if site[0] is scope]
        elif _imported_results(engine, node.value, scope, wrapped):
            return True  # never this file's wrapped model
        # else it may hold a result of this file not followed (a setup call): it counts
    return all(
        s is scope and (line < at and not looped or other_arm(engine, node, rest))
        for s, at, looped, *rest in sites
    )


def other_arm(engine: Engine, use: cst.CSTNode, call: list[cst.CSTNode]) -> bool:
    """Whether ``use`` and the wrapper ``call`` are in different arms of one ``if`` chain.

    Such a use never runs after that call in one run of their function (a worker's
    ``if strategy == "fsdp": FSDP(m) ... elif strategy == "fsdp2": m.state_dict()``),
    unless a loop of the function goes round the ``if``. ``call`` is the site's optional
    last item (a site that stands for another function's result has none).
    """
    if not call:
        return False
    above = set()
    node = engine.parent(call[0])
    while node is not None:
        above.add(id(node))
        node = engine.parent(node)
    child, node = use, engine.parent(use)
    while node is not None and id(node) not in above:
        child, node = node, engine.parent(node)
    if not isinstance(node, cst.If) or node.orelse is None:
        return False
    arms = {id(node.body), id(node.orelse)}
    return id(child) in arms and len(arms & above) == 1 and not in_loop(engine, node)


def _imported_results(engine: Engine, name: cst.Name, scope: Any, wrapped: frozenset[str]) -> bool:
    """Whether each binding of ``name`` in ``scope`` is the result of an imported callable.

    ``model = get_peft_model(Net(), config)``: no function of this file returns it, so it
    is none of this file's wrapped models; unless it is given a name a wrapper call
    binds (``copy.deepcopy(model)``).
    """
    for assignment in scope[name.value]:
        parent = engine.parent(getattr(assignment, "node", None))
        statement = engine.parent(parent) if isinstance(parent, cst.AssignTarget) else None
        value = getattr(statement, "value", None)
        if not isinstance(statement, cst.Assign) or not isinstance(value, cst.Call):
            return False
        # A wrapped model's name passed in; the variable itself is what its own bindings
        # made (`model = get_peft_model(model, config)`).
        names = find_all(value, lambda n: isinstance(n, cst.Name) and n.value in wrapped)
        if any(engine.parent(n) is not value.func and n.value != name.value for n in names):
            return False
        head = value.func
        while isinstance(head, cst.Attribute):
            head = head.value
        bound = (
            list(scope[head.value]) if isinstance(head, cst.Name) and head.value in scope else []
        )
        if not bound or not all(
            isinstance(getattr(b, "node", None), (cst.Import, cst.ImportFrom)) for b in bound
        ):
            return False
    return True


def _local_name(engine: Engine, node: cst.CSTNode, scope: Any) -> bool:
    """Whether ``node`` is a name bound only by statements of ``scope``, a function's.

    Not a parameter (a caller may pass the wrapped model), not global, and rebound by
    no nested function (``nonlocal``). A nested function may read it (Lumina's
    ``model_func`` in the training loop): that changes nothing the name holds here.
    """
    if not isinstance(node, cst.Name) or not isinstance(scope, cst.metadata.FunctionScope):
        return False
    assignments = list(scope[node.value]) if node.value in scope else []
    declared = find_all(
        scope.node,
        lambda n: (
            isinstance(n, (cst.Nonlocal, cst.Global))
            and any(item.name.value == node.value for item in n.names)
        ),
    )
    return (
        bool(assignments)
        and not declared
        and all(
            a.scope is scope
            and isinstance(a, cst.metadata.Assignment)
            and not isinstance(a.node, cst.Param)
            and not isinstance(engine.parent(a.node), cst.Param)
            for a in assignments
        )
    )


def module_list(engine: Engine, node: cst.CSTNode) -> cst.Call | None:
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


def annotates(engine: Engine, node: cst.CSTNode) -> bool:
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


def tested_class(engine: Engine, node: cst.CSTNode) -> bool:
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


def in_module(engine: Engine, keep: Any) -> list[cst.CSTNode]:
    """``find_all(engine.module, keep)``, from one walk of the module a file.

    The survey asks the whole module several times (its names, its imports, its
    references): libcst's visit of a large module (a 290 kB test file) is seconds.
    """
    nodes = engine.scratch.get("FSDP401-nodes")
    if nodes is None:
        nodes = engine.scratch["FSDP401-nodes"] = find_all(engine.module, _every)
    return [node for node in nodes if keep(node)]


def _every(node: cst.CSTNode) -> bool:
    return True


def fresh(engine: Engine, wanted: str) -> str:
    """``wanted``, with ``_`` appended until no name in the module is spelled so."""
    used = engine.scratch.get("FSDP401-names")
    if used is None:
        nodes = in_module(engine, lambda n: isinstance(n, cst.Name))
        used = engine.scratch["FSDP401-names"] = {n.value for n in nodes}
    while wanted in used:
        wanted += "_"
    return wanted


def source_order(engine: Engine, node: cst.CSTNode) -> tuple[int, int, int, int]:
    """Where ``node`` starts, the outer of two nodes that start together first."""
    where = engine.position(node)
    return (where.start.line, where.start.column, -where.end.line, -where.end.column)


#: Where FSDP2's ``fully_shard`` lives (public since torch 2.6, composable before).
FSDP2_HOMES = (TORCH_FSDP, COMPOSABLE_FSDP)


def other_fully_shard(engine: Engine) -> bool:
    """Whether the file's name ``fully_shard`` is another API's (the old composable one)."""
    homes = {f"{home}.fully_shard" for home in FSDP2_HOMES}
    names = in_module(engine, lambda n: isinstance(n, cst.Name) and n.value == "fully_shard")
    return any(not engine.qualified(n) & homes for n in names if engine.qualified(n))


def imported_here(engine: Engine, node: cst.CSTNode, module: str, name: str | None) -> bool:
    """Whether ``name`` at ``node`` is already ``module``'s ``name`` (a function's import).

    The code written there reads that binding; a module-level import of it would go
    unused (``from torch.distributed.fsdp import ShardingStrategy`` inside a method).
    """
    scope = engine.scope(node)
    if name is None or scope is None or name not in scope:
        return False
    return {q.name for q in scope.get_qualified_names_for(name)} == {f"{module}.{name}"}
