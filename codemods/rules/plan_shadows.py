"""Renames held where their new name is already bound to something else in the file.

``from pytorch_lightning.strategies import DDPFullyShardedNativeStrategy`` renamed to
``FSDPStrategy`` in a module that also says ``FSDPStrategy = make_strategy()``: every
renamed use would read the module's own ``FSDPStrategy``. Both planners (libcst's
:class:`codemods.rules.plan.Planner` and the ``ast`` detector's walk) hold such a rename
as a clash, with the same words (:func:`codemods.rules.plan.why_not`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from codemods.registry import REGISTRY, Rule

#: What binds a name anywhere in the file: for an import, the qualified name it binds
#: (``a.b.C`` for ``from a.b import C``); None for any other binding.
Bindings = Callable[[str], Iterable["str | None"]]


def shadowed_renames(
    codes: Iterable[str],
    olds: Mapping[str, set[str]],
    bindings: Bindings,
    new_name: Callable[[Rule, str], str | None],
) -> set[str]:
    """The rules among ``codes`` whose new name the file binds to something else.

    ``new_name`` is :func:`codemods.rules.plan.new_name` (passed in: the planner imports
    this module).

    Example:
        >>> olds = {"FSDP203": {"pytorch_lightning.strategies.DDPFullyShardedNativeStrategy"}}
        >>> from codemods.rules.plan import new_name
        >>> shadowed_renames({"FSDP203"}, olds, lambda name: [None], new_name)
        {'FSDP203'}
        >>> same = lambda name: ["pytorch_lightning.strategies.FSDPStrategy"]
        >>> shadowed_renames({"FSDP203"}, olds, same, new_name)
        set()
    """
    found: set[str] = set()
    for code in codes:
        rule = REGISTRY[code]
        for old in olds.get(code, ()):
            new = new_name(rule, old)
            if not new:
                continue
            leaf = new.rpartition(".")[2]
            if leaf == old.rpartition(".")[2]:
                continue  # the name a from-import binds stays: nothing new is bound
            if any(bound != new for bound in bindings(leaf)):
                found.add(code)
                break
    return found


def import_binding(module: str | None, level: int, name: str, asname: str | None) -> str | None:
    """The qualified name an import alias binds (None for a relative import).

    Example:
        >>> import_binding("a.b", 0, "C", None)
        'a.b.C'
        >>> import_binding(None, 0, "a.b", "ab")
        'a.b'
        >>> import_binding("pkg", 1, "C", None) is None
        True
    """
    if level:
        return None
    return f"{module}.{name}" if module else name
