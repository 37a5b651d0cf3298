"""The second stage of the pre-filter: which old names a file can refer to, by ``ast``.

The text filter (:mod:`codemods.screen.prefilter`) lets through files that merely mention an
old name; ``ast`` parses them many times faster than libcst and is enough to see
what the file imports and which dotted names it builds from those imports. A file goes
on to libcst (and its name resolution) only if one of those names is an old name a
rule looks for, a class an old hook lives on, or a callable whose rule is about a
keyword argument the file passes somewhere; or if a function has the parameter a
definition rule looks for.

The scan is deliberately cruder than libcst's resolution and never stricter: it ignores
scopes (a shadowed import still counts) and counts every use, so it can only let
through more files, never fewer. Relative and star imports resolve to nothing in libcst
either.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator

from codemods.records import Frozen
from codemods.registry import REGISTRY
from codemods.screen.needs import needs
from codemods.settings import Settings
from codemods.syntax.ast_nodes import alias_assignment, dotted, tree_index


class _Targets(Frozen):
    """What the enabled rules look for, as the scan can see it.

    Attributes:
        names: Old names any use of which is a finding (and the classes hooks live on).
        calls: Callables whose finding needs one of their keyword arguments.
        parameters: Parameters a definition rule finds in the user's own functions.
    """

    __slots__ = _fields = ("names", "calls", "parameters")

    names: frozenset[str]
    calls: dict[str, frozenset[str]]
    parameters: frozenset[str]

    def __init__(
        self,
        names: frozenset[str],
        calls: dict[str, frozenset[str]],
        parameters: frozenset[str],
    ) -> None:
        self._set(names=names, calls=calls, parameters=parameters)


@functools.lru_cache(maxsize=16)
def _targets(settings: Settings) -> _Targets:
    names: set[str] = set()
    calls: dict[str, set[str]] = {}
    parameters: set[str] = set()
    for rule in REGISTRY:
        if not settings.enabled(rule):
            continue
        need = needs(rule)
        if need.parameter:
            parameters.add(need.parameter)
        names.update(need.names)
        for name in need.calls:
            calls.setdefault(name, set()).add(need.keyword)
    return _Targets(
        frozenset(names),
        {name: frozenset(arguments) for name, arguments in calls.items()},
        frozenset(parameters),
    )


class _Module:
    """What the scan reads of a module's ``ast``: its imports at once, the rest if asked.

    A file importing an old name is decided by its imports; only one that does not is
    asked for its uses, keywords and parameters (node types compared exactly: ``ast``
    has no subclasses).
    """

    __slots__ = ("_get", "_keywords", "bound", "imported")

    def __init__(self, tree: ast.AST) -> None:
        self._get = get = tree_index(tree).by_type.get
        self.bound: dict[str, set[str]] = {}
        self.imported: list[str] = []
        self._keywords: set[str | None] | None = None
        for node in get(ast.Import, ()):
            for alias in node.names:  # type: ignore[attr-defined]
                local = alias.asname or alias.name.partition(".")[0]
                self.bound.setdefault(local, set()).add(alias.name if alias.asname else local)
                self.imported.append(alias.name)
        for node in get(ast.ImportFrom, ()):
            if node.level == 0 and node.module:  # type: ignore[attr-defined]
                for alias in node.names:  # type: ignore[attr-defined]
                    if alias.name != "*":
                        qualified = f"{node.module}.{alias.name}"  # type: ignore[attr-defined]
                        self.bound.setdefault(alias.asname or alias.name, set()).add(qualified)
                        self.imported.append(qualified)
        for statement in getattr(tree, "body", ()):  # `FSDP = FullyShardedDataParallel`
            found = alias_assignment(statement)
            if found is not None:
                root, _, rest = dotted(found[1]).partition(".")  # type: ignore[union-attr]
                bases = self.bound.get(root, ())
                targets = {f"{base}.{rest}" if rest else base for base in bases}
                if targets:
                    self.bound.setdefault(found[0], set()).update(targets)

    def uses(self) -> list[ast.AST]:
        """Every name and attribute of the module."""
        return [*self._get(ast.Name, ()), *self._get(ast.Attribute, ())]

    def keywords(self) -> set[str | None]:
        """The keyword of every argument passed by keyword (None for ``**``)."""
        if self._keywords is None:
            self._keywords = {node.arg for node in self._get(ast.keyword, ())}  # type: ignore[attr-defined]
        return self._keywords

    def parameters(self) -> set[str]:
        """The name of every parameter of every function and lambda."""
        return {a.arg for node in self._get(ast.arguments, ()) for a in _all_arguments(node)}  # type: ignore[arg-type]


def _referenced(module: _Module) -> Iterator[str]:
    yield from module.imported
    bound = module.bound
    for node in module.uses():
        if type(node) is ast.Name:
            if node.id in bound:  # type: ignore[attr-defined]
                yield from bound[node.id]  # type: ignore[attr-defined]
            continue
        base = node
        while type(base) is ast.Attribute:
            base = base.value  # type: ignore[attr-defined]
        if type(base) is not ast.Name or base.id not in bound:  # type: ignore[attr-defined]
            continue  # most chains start at a local name (`self.x`): not written out
        rest = dotted(node).partition(".")[2]  # type: ignore[union-attr]
        for start in bound[base.id]:  # type: ignore[attr-defined]
            yield f"{start}.{rest}"


def _refers_to(name: str, targets: frozenset[str]) -> bool:
    """``name`` is a target, or something inside one (``Old.attribute``)."""
    while name:
        if name in targets:
            return True
        name = name.rpartition(".")[0]
    return False


def may_have_findings(tree: ast.Module, settings: Settings) -> bool:
    """False only where no rule enabled by ``settings`` can find anything in ``tree``."""
    if settings.lightning_bases:
        return True  # a base defined in another file of the run: its hooks are looked at
    targets = _targets(settings)
    module = _Module(tree)
    for name in _referenced(module):
        if _refers_to(name, targets.names):
            return True
        wanted = targets.calls.get(name)
        if wanted and module.keywords() & wanted:
            return True
    return bool(
        targets.parameters and targets.parameters & (module.parameters() | module.keywords())
    )


def _all_arguments(node: ast.arguments) -> list[ast.arg]:
    return [*node.posonlyargs, *node.args, *node.kwonlyargs]
