"""FSDP1-only methods called on a model in a file that never names FSDP1's class.

A project builds its model in one module (``return FSDP(model, ...)``) and trains it in
another, which imports the builder and calls ``model.clip_grad_norm_(1.0)`` or enters
``model.no_sync()``. FSDP401 rewrites the builder to ``fully_shard``; an FSDP2 model has
neither method, and the training loop raises at its first step. The loop's file names
no FSDP class, so no rule visits it: :class:`codemods.cli.project_fsdp1.ProjectFsdp1Checks`
reads such files of the run with :func:`instance_uses` and counts their uses as checks
that keep a builder whose models reach them FSDP1, with the file and line in the reason.

Only names no other common object spells the same way count: ``module``, ``params``
or ``rank`` are everybody's. A call that takes FSDP1's method for another's is left
out: ``accelerator.clip_grad_norm_(model.parameters(), 1.0)`` (Accelerate's, which takes
the parameters first), ``accelerator.no_sync(model)`` (FSDP1's takes no argument), and
anything on an imported module (``torch.nn.utils.clip_grad_norm_``).
"""

from __future__ import annotations

import ast

from codemods.cli.shared_walks import walk
from codemods.syntax.ast_nodes import dotted

#: FSDP1 model attributes an FSDP2 model lacks, spelled by nothing else in common use.
METHODS = (
    "clip_grad_norm_",
    "no_sync",
    "summon_full_params",
    "_fsdp_wrapped_module",
    "check_is_root",
    "_flat_param",
)
_WORDS = tuple(name.encode() for name in METHODS)


def may_use(text: bytes) -> bool:
    """Whether a file's bytes spell one of :data:`METHODS` (the cheap test before parsing).

    Example:
        >>> may_use(b"model.clip_grad_norm_(1.0)"), may_use(b"model.step()")
        (True, False)
    """
    return any(word in text for word in _WORDS)


def instance_uses(tree: ast.Module) -> list[tuple[int, str]]:
    r"""Each use of :data:`METHODS` on something not imported: ``(line, "model.no_sync")``.

    Example:
        >>> source = (
        ...     "import torch\n"
        ...     "def step(model, accelerator):\n"
        ...     "    model.clip_grad_norm_(1.0)\n"
        ...     "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        ...     "    accelerator.clip_grad_norm_(model.parameters(), 1.0)\n"
        ...     "    with model.no_sync(), accelerator.no_sync(model):\n"
        ...     "        pass\n"
        ... )
        >>> instance_uses(ast.parse(source))
        [(3, 'model.clip_grad_norm_'), (6, 'model.no_sync')]
    """
    imported = _imported_names(tree)
    calls = {id(node.func): node for node in walk(tree) if isinstance(node, ast.Call)}
    found = []
    for node in walk(tree):
        if not isinstance(node, ast.Attribute) or node.attr not in METHODS:
            continue
        owner = dotted(node.value)
        if owner is not None and owner.split(".", 1)[0] in imported:
            continue  # a module's function, or an imported object's own method
        call = calls.get(id(node))
        if call is not None and not _fsdp1_arguments(node.attr, call):
            continue
        found.append((node.lineno, f"{owner or '(...)'}.{node.attr}"))
    return sorted(found)


def _fsdp1_arguments(method: str, call: ast.Call) -> bool:
    """Whether ``call``'s arguments fit FSDP1's method, not another library's namesake."""
    if method == "no_sync":
        return not call.args and not call.keywords  # FSDP1's takes none
    if method == "clip_grad_norm_" and call.args:
        first = call.args[0]
        # torch's function and Accelerate's method take the parameters first
        return not (isinstance(first, ast.Call) and _names_parameters(first.func))
    return True


def _names_parameters(func: ast.expr) -> bool:
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("parameters", "named_parameters")


def _imported_names(tree: ast.Module) -> set[str]:
    """The names an import binds anywhere in the module."""
    names = set()
    for node in walk(tree):
        if isinstance(node, ast.Import):
            names.update((alias.asname or alias.name).split(".", 1)[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in node.names)
    return names
