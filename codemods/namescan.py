"""The second stage of the pre-filter: which old names a file can refer to, by ``ast``.

The text filter (:mod:`codemods.prefilter`) lets through files that merely mention an
old name; ``ast`` parses them about 15 times faster than libcst and is enough to see
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
from dataclasses import dataclass

from codemods.registry import REGISTRY, ChangeKind
from codemods.settings import DEFINITION_RULES, Settings


def _dotted(node: ast.AST) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


@dataclass(frozen=True)
class _Targets:
    """What the enabled rules look for, as the scan can see it.

    Attributes:
        names: Old names any use of which is a finding (and the classes hooks live on).
        calls: Callables whose finding needs one of their keyword arguments.
        parameters: Parameters a definition rule finds in the user's own functions.
    """

    names: frozenset[str]
    calls: dict[str, frozenset[str]]
    parameters: frozenset[str]


@functools.lru_cache(maxsize=16)
def _targets(settings: Settings) -> _Targets:
    names: set[str] = set()
    calls: dict[str, set[str]] = {}
    parameters: set[str] = set()
    for rule in REGISTRY:
        if not settings.enabled(rule):
            continue
        if rule.code in DEFINITION_RULES and rule.argument:
            parameters.add(rule.argument)
        for old in rule.old:
            if rule.kind is ChangeKind.METHOD_RENAME:
                names.add(old.rpartition(".")[0])  # a hook is found through its class
            elif rule.argument is None or rule.kind is ChangeKind.DEFAULT_CHANGE:
                names.add(old)
            else:
                calls.setdefault(old, set()).add(rule.argument)
    return _Targets(
        frozenset(names),
        {name: frozenset(arguments) for name, arguments in calls.items()},
        frozenset(parameters),
    )


def referenced_names(tree: ast.AST) -> Iterator[str]:
    r"""Every qualified name the module's imports let it spell, with a shadow-blind scan.

    Example:
        >>> tree = ast.parse("import pytorch_lightning as pl\npl.strategies.X()")
        >>> sorted(set(referenced_names(tree)))
        ['pytorch_lightning', 'pytorch_lightning.strategies', 'pytorch_lightning.strategies.X']
    """
    bound: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.partition(".")[0]
                bound.setdefault(local, set()).add(alias.name if alias.asname else local)
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                if alias.name != "*":
                    qualified = f"{node.module}.{alias.name}"
                    bound.setdefault(alias.asname or alias.name, set()).add(qualified)
                    yield qualified
    for node in ast.walk(tree):
        if isinstance(node, (ast.Name, ast.Attribute)):
            parts = _dotted(node)
            if parts and parts[0] in bound:
                for base in bound[parts[0]]:
                    yield ".".join([base, *parts[1:]])


def _refers_to(name: str, targets: frozenset[str]) -> bool:
    """``name`` is a target, or something inside one (``Old.attribute``)."""
    while name:
        if name in targets:
            return True
        name = name.rpartition(".")[0]
    return False


def may_have_findings(source: bytes, settings: Settings) -> bool:
    """False only where no rule enabled by ``settings`` can find anything in ``source``.

    Sources ``ast`` cannot parse (Python 2, a newer syntax) go on to libcst, which reports
    them properly.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return True
    targets = _targets(settings)
    keywords = {node.arg for node in ast.walk(tree) if isinstance(node, ast.keyword)}
    for name in referenced_names(tree):
        if _refers_to(name, targets.names) or targets.calls.get(name, frozenset()) & keywords:
            return True
    return (
        bool(targets.parameters)
        and any(
            argument.arg in targets.parameters
            for node in ast.walk(tree)
            if isinstance(node, ast.arguments)
            for argument in _all_arguments(node)
        )
        or bool(targets.parameters & keywords)
    )


def _all_arguments(node: ast.arguments) -> list[ast.arg]:
    return [*node.posonlyargs, *node.args, *node.kwonlyargs]
