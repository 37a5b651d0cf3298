r"""A file's evidence floor: the oldest release on which every API it uses exists.

Where a project declares no floor, the releases a file runs on start at its evidence
floor (:mod:`codemods.releases`): a test that imports ``fully_shard`` from
``torch.distributed._composable.fsdp`` runs on torch 2.4 and 2.5 too, so a fix that needs
torch 2.6 would break it there. The floor of each framework is the newest first release
(:data:`codemods.registry.appearances.APPEARED`) among the names the file imports or
reaches through an imported module, and at least the framework's first FSDP release.

Code that bridges releases on purpose evidences nothing: names imported inside a
``try: ... except ImportError:`` block or an ``if`` gated on a release or capability
(:data:`codemods.syntax.gates.GATE`) are the file's way of running on several releases,
not a floor.

Example:
    >>> import ast
    >>> tree = ast.parse("from torch.distributed._composable.fsdp import fully_shard\n")
    >>> floors = evidence_floors(tree)
    >>> str(floors["torch"][0]), floors["torch"][1]
    ('2.4', '`torch.distributed._composable.fsdp.fully_shard` (torch 2.4)')
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from packaging.version import Version

from codemods.registry.appearances import APPEARED, BASELINE, PACKAGES
from codemods.settings import Settings
from codemods.syntax.ast_nodes import dotted, tree_index
from codemods.syntax.gates import GATE, catches_import_error

__all__ = ["against_declared", "evidence_floors", "set_aside_notes", "with_evidence"]

_TITLES = {"torch": "torch", "lightning": "Lightning"}


def with_evidence(
    source: bytes, settings: Settings, tree: ast.Module | None
) -> tuple[Settings, ast.Module] | None:
    """``settings`` with the file's evidence floors filled in, and the tree read for them.

    None where no floor is left to the evidence, or ``ast`` cannot parse the file (the
    engine then reports why).
    """
    if not settings.releases.needs_evidence:
        return None
    if tree is None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return None
    releases = settings.releases.with_evidence(evidence_floors(tree))
    return settings.replace(releases=releases), tree


def against_declared(source: bytes, settings: Settings) -> tuple[Settings, ast.Module | None]:
    """``settings`` judged against the file's evidence where a declared top may be below it.

    Run before the pre-filter, which asks the range which rules can matter: a file of a
    project pinned to torch 1.10 that imports ``MixedPrecision`` (1.12) is judged from
    1.12 up, and so screened (:meth:`codemods.releases.Releases.with_evidence`). Only a
    project that declares a top pays for it, and only in files that name a framework.
    The tree is returned where it was parsed, for the pre-filter to reuse.
    """
    spans = (settings.releases.torch, settings.releases.lightning)
    if not any(span.declared and span.top is not None for span in spans):
        return settings, None
    if not any(word in source for word in (b"torch", b"lightning", b"fairscale")):
        return settings, None
    evidenced = with_evidence(source, settings, None)
    return evidenced if evidenced is not None else (settings, None)


def set_aside_notes(path: str, settings: Settings) -> list[str]:
    """A ``note:`` line per framework whose declared range the file's evidence set aside.

    Example:
        >>> from packaging.version import Version
        >>> from codemods.releases import Releases, Span
        >>> pin = Span(Version("1.10.2"), Version("1.10.2"), top_origin="declared: env.yml:4")
        >>> releases = Releases(torch=pin.replace(declared=True)).with_evidence(
        ...     {"torch": (Version("1.12"), "`MixedPrecision` (torch 1.12)")}
        ... )
        >>> (note,) = set_aside_notes("train.py", Settings(releases=releases))
        >>> note.split(" is below ")[0]
        'note: train.py: torch 1.10.2 (declared: env.yml:4)'
        >>> note.partition("uses, ")[2]
        '`MixedPrecision` (torch 1.12): it is judged at torch 1.12..latest'
    """
    notes = []
    for framework, title in _TITLES.items():
        span = settings.releases.span(framework)
        if span.set_aside:
            used = span.floor_origin.removeprefix("evidence: ")
            notes.append(
                f"note: {path}: {title} {span.set_aside} is below what the file uses, "
                f"{used}: it is judged at {title} {span.text()}"
            )
    return notes


def evidence_floors(tree: ast.Module) -> dict[str, tuple[Version, str]]:
    """Each framework the file uses -> (its evidence floor, what evidences it).

    A framework the file does not use is absent.
    """
    floors: dict[str, tuple[Version, str]] = {}
    for name in _names(tree):
        framework = PACKAGES.get(name.partition(".")[0])
        if framework is None:
            continue
        if framework not in floors:
            baseline = BASELINE[framework]
            floors[framework] = (
                Version(baseline),
                f"nothing newer than {_TITLES[framework]} {baseline} is used",
            )
        appeared = _appeared(name)
        if appeared is not None and appeared[0] == framework:
            release = Version(appeared[1])
            if release > floors[framework][0]:
                why = f"`{name}` ({_TITLES[framework]} {appeared[1]})"
                floors[framework] = (release, why)
    return floors


def _appeared(name: str) -> tuple[str, str] | None:
    """The entry for ``name`` or the nearest module holding it."""
    while name:
        found = APPEARED.get(name)
        if found is not None:
            return found
        name = name.rpartition(".")[0]
    return None


def _names(tree: ast.Module) -> Iterator[str]:
    """The qualified names the file's ungated code imports or reaches through imports."""
    bound: dict[str, str] = {}
    attributes: list[ast.Attribute] = []
    for node in _ungated(tree):
        kind = type(node)
        if kind is ast.Import:
            for alias in node.names:  # type: ignore[attr-defined]
                yield alias.name
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    top = alias.name.partition(".")[0]
                    bound[top] = top
        elif kind is ast.ImportFrom and node.module and not node.level:  # type: ignore[attr-defined]
            for alias in node.names:  # type: ignore[attr-defined]
                if alias.name == "*":
                    yield node.module  # type: ignore[attr-defined]
                    continue
                qualified = f"{node.module}.{alias.name}"  # type: ignore[attr-defined]
                yield qualified
                bound[alias.asname or alias.name] = qualified
        elif kind is ast.Attribute:
            attributes.append(node)  # type: ignore[arg-type]
    for node in attributes:
        name = dotted(node)
        if name is None:
            continue
        root, _, rest = name.partition(".")
        if root in bound:
            yield f"{bound[root]}.{rest}"


def _ungated(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``tree`` outside import fallbacks and release-gated ``if`` blocks.

    Through the tree's index (:func:`~codemods.syntax.ast_nodes.tree_index`), which the
    pre-filter's scan has built for a file it let through: looking children up there
    costs a small part of ``ast.iter_child_nodes``. The context and operator nodes it
    leaves out hold nothing this walk is for.
    """
    below = tree_index(tree).below
    stack = [tree]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is ast.Try and any(map(catches_import_error, node.handlers)):  # type: ignore[attr-defined]
            continue
        if kind is ast.If and _gate(node.test):  # type: ignore[attr-defined]
            continue
        yield node
        stack.extend(below[id(node)])


def _gate(test: ast.expr) -> bool:
    """Whether ``GATE`` finds a release gate in the ``if`` test ``test``'s code.

    ``ast.unparse`` writes the code back, a visitor that costs more than the whole
    walk of most files, for every ``if``. Every word ``GATE`` looks for is written by an
    identifier, an attribute, a keyword, a parameter or a string of the test, and its
    ``hasattr(X`` form by a ``hasattr`` call: those are looked at first, and only a test
    they may gate is written back and searched as before.

    Example:
        >>> _gate(ast.parse("if v >= version.parse('2.4'): pass").body[0].test)
        True
        >>> _gate(ast.parse("if hasattr(torch.distributed, 'fsdp'): pass").body[0].test)
        True
        >>> _gate(ast.parse("if model.training and x > 2: pass").body[0].test)
        False
    """
    words: list[str] = []
    for node in ast.walk(test):
        kind = type(node)
        if kind is ast.Name:
            words.append(node.id)  # type: ignore[attr-defined]
        elif kind is ast.Attribute:
            words.append(node.attr)  # type: ignore[attr-defined]
        elif kind is ast.keyword or kind is ast.arg:
            words.append(node.arg or "")  # type: ignore[attr-defined]
        elif kind is ast.Constant and isinstance(node.value, (str, bytes)):  # type: ignore[attr-defined]
            words.append(str(node.value))  # type: ignore[attr-defined]
        elif kind is ast.Call and node.args and getattr(node.func, "id", None) == "hasattr":  # type: ignore[attr-defined]
            words.append("hasattr(" + ast.unparse(node.args[0]))  # type: ignore[attr-defined]
    return GATE.search(" ".join(words)) is not None and GATE.search(ast.unparse(test)) is not None
