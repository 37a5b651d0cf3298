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
import functools
from collections import deque
from collections.abc import Callable, Iterator

from codemods.registry.appearances import APPEARED, BASELINE, PACKAGES
from codemods.release_numbers import Release, release
from codemods.settings import Settings
from codemods.syntax.alias_positions import parse
from codemods.syntax.ast_nodes import dotted, tree_index
from codemods.syntax.gates import GATE, catches_import_error

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from codemods.releases import Span

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
            tree = parse(source)
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
    if not any(
        any(map(source.__contains__, _above(framework, settings.releases.span(framework))))
        for framework in _TITLES
    ):
        return settings, None  # no evidence can set a top aside: parsed later, if at all
    evidenced = with_evidence(source, settings, None)
    return evidenced if evidenced is not None else (settings, None)


@functools.lru_cache(maxsize=16)
def _above(framework: str, span: Span) -> tuple[bytes, ...]:
    """Words a file spells one of where its ``framework`` evidence may pass ``span``'s top.

    A name evidences its release, or its nearest module's (:func:`_appeared`), and a
    name spells each part of itself (in its import or its attribute chain): each entry
    newer than the top gives its last part. A framework's baseline newer than the top
    gives its package roots (any use of the framework). Nothing for a span that is
    not declared with a top.

    Example:
        >>> from codemods.releases import Span
        >>> pinned = Span(release("1.10.2"), release("1.10.2"), declared=True)
        >>> words = _above("torch", pinned)  # torch.distributed.fsdp is 1.11's
        >>> b"fsdp" in words, b"MixedPrecision" in words, b"torch" in words
        (True, True, False)
        >>> _above("torch", Span(release("2.0"), declared=True))
        ()
    """
    if not (span.declared and span.top is not None):
        return ()
    found = {
        key.rpartition(".")[2].encode()
        for key, (owner, first) in APPEARED.items()
        if owner == framework and not span.reaches(release(first))
    }
    if not span.reaches(release(BASELINE[framework])):
        found.update(root.encode() for root, owner in PACKAGES.items() if owner == framework)
    return tuple(sorted(found))


def set_aside_notes(path: str, settings: Settings) -> list[str]:
    """A ``note:`` line per framework whose declared range the file's evidence set aside.

    Example:
        >>> from codemods.releases import Releases, Span
        >>> pin = Span(release("1.10.2"), release("1.10.2"), top_origin="declared: env.yml:4")
        >>> releases = Releases(torch=pin.replace(declared=True)).with_evidence(
        ...     {"torch": (release("1.12"), "`MixedPrecision` (torch 1.12)")}
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


def evidence_floors(tree: ast.Module) -> dict[str, tuple[Release, str]]:
    """Each framework the file uses -> (its evidence floor, what evidences it).

    A framework the file does not use is absent.
    """
    floors: dict[str, tuple[Release, str]] = {}
    for name in _names(tree):
        framework = PACKAGES.get(name.partition(".")[0])
        if framework is None:
            continue
        if framework not in floors:
            baseline = BASELINE[framework]
            floors[framework] = (
                release(baseline),
                f"nothing newer than {_TITLES[framework]} {baseline} is used",
            )
        appeared = _appeared(name)
        if appeared is not None and appeared[0] == framework:
            found = release(appeared[1])
            if found > floors[framework][0]:
                why = f"`{name}` ({_TITLES[framework]} {appeared[1]})"
                floors[framework] = (found, why)
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
    """The qualified names the file's ungated code imports or reaches through imports.

    The imports first, then the attributes, each in the order of a walk that takes a
    node's children last first (which decides the evidence's wording where two names
    appeared in the same release): read from the tree's index, which holds each type's
    nodes first child first (:func:`~codemods.syntax.ast_nodes.tree_index`), without
    walking the tree again (see :func:`_ungated`).
    """
    index = tree_index(tree)
    by_type = index.by_type
    gated = _spans([n for n in by_type.get(ast.If, ()) if _gate(n.test, index.below)])  # type: ignore[attr-defined]
    outside = _ungated(by_type, gated)
    every = [*by_type.get(ast.Import, ()), *by_type.get(ast.ImportFrom, ())]
    # A name bound one way only where another package is missing (`except ImportError:`
    # after `import torch_xla`) names that for the code outside, the usual path: its uses
    # there evidence, its import does not; nor a name bound there two ways.
    hidden: dict[str, set[str]] = {}
    for node in _where_another_is_missing(by_type, index.below, gated):
        for local, qualified, _ in _bound_by(node):
            if local is not None:
                hidden.setdefault(local, set()).add(qualified)
    bound = {local: next(iter(found)) for local, found in hidden.items() if len(found) == 1}
    # Statements never nest in an import, and their lists hold them in source order:
    # the walk meets them last first.
    imports = sorted(
        filter(outside, every),
        key=lambda node: (node.lineno, node.col_offset),  # type: ignore[attr-defined]
        reverse=True,
    )
    for node in imports:
        for local, qualified, named in _bound_by(node):
            yield named
            if local is not None:
                bound[local] = qualified
    for node in _last_first(list(filter(outside, by_type.get(ast.Attribute, ())))):
        base = node
        while type(base) is ast.Attribute:
            base = base.value  # type: ignore[attr-defined]
        if type(base) is not ast.Name or base.id not in bound:  # type: ignore[attr-defined]
            continue  # most chains start at a local name: not written out
        root, _, rest = dotted(node).partition(".")  # type: ignore[union-attr]
        yield f"{bound[root]}.{rest}"
    # A name only the fallback imports, read outside it (`ShardedOptimStateDictConfig(...)`)
    only_hidden = {name for name in hidden if bound.get(name) in hidden[name]}
    for node in by_type.get(ast.Name, ()) if only_hidden else ():
        if node.id in only_hidden and outside(node):  # type: ignore[attr-defined]
            yield bound[node.id]  # type: ignore[attr-defined]


def _bound_by(node: ast.AST) -> Iterator[tuple[str | None, str, str]]:
    """``(local name, what it names, the name the import evidences)`` for each name of an import.

    A star import binds nothing known (None) and evidences its module; a relative import
    gives nothing.
    """
    if type(node) is ast.Import:
        for alias in node.names:  # type: ignore[attr-defined]
            if alias.asname:
                yield alias.asname, alias.name, alias.name
            else:
                top = alias.name.partition(".")[0]
                yield top, top, alias.name
    elif node.module and not node.level:  # type: ignore[attr-defined]
        for alias in node.names:  # type: ignore[attr-defined]
            if alias.name == "*":
                yield None, node.module, node.module  # type: ignore[attr-defined]
                continue
            qualified = f"{node.module}.{alias.name}"  # type: ignore[attr-defined]
            yield alias.asname or alias.name, qualified, qualified


def _last_first(attributes: list[ast.AST]) -> list[ast.AST]:
    """``attributes``, first child first, in the order of a walk taking the last first.

    The two orders are each other's reverse, but for a node and its descendants: an
    attribute's only attribute descendants are those of its chain (``a.b`` of ``a.b.c``),
    which come right after it in either order, outermost first.
    """
    runs: list[list[ast.AST]] = []
    for node in attributes:
        if runs and runs[-1][-1].value is node:  # type: ignore[attr-defined]
            runs[-1].append(node)
        else:
            runs.append([node])
    return [node for run in reversed(runs) for node in run]


def _where_another_is_missing(
    by_type: dict[type, list[ast.AST]],
    below: dict[ast.AST, list[ast.AST]],
    gated: list[tuple[tuple[int, int], tuple[int, int]]],
) -> list[ast.AST]:
    """The imports of ``except ImportError:`` after a ``try`` that imports no framework.

    ``try: import torch_xla ... except ImportError: from torch.distributed.fsdp import
    ...``: the handler is the usual path, not an older spelling of the same API. Not
    inside a release gate (``gated``: their spans).
    """
    found: list[ast.AST] = []
    for node in by_type.get(ast.Try, ()):
        handlers = [h for h in node.handlers if catches_import_error(h)]  # type: ignore[attr-defined]
        tried = [n for child in node.body for n in _walk(child, below)]  # type: ignore[attr-defined]
        if handlers and not any(
            root.partition(".")[0] in PACKAGES
            for n in tried
            if type(n) in (ast.Import, ast.ImportFrom)
            for _, root, _ in _bound_by(n)
        ):
            found += [
                n
                for handler in handlers
                for n in _walk(handler, below)
                if type(n) in (ast.Import, ast.ImportFrom)
            ]
    return [n for n in found if not _inside(n, gated)]


def _walk(node: ast.AST, below: dict[ast.AST, list[ast.AST]]) -> Iterator[ast.AST]:
    """``node`` and every node below it, through the tree's index."""
    stack = [node]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(below[node])


def _spans(nodes: list[ast.AST]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    return [
        ((node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset))  # type: ignore[attr-defined]
        for node in nodes
    ]


def _inside(node: ast.AST, spans: list[tuple[tuple[int, int], tuple[int, int]]]) -> bool:
    at = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
    return any(start <= at < end for start, end in spans)


def _ungated(
    by_type: dict[type, list[ast.AST]], gated: list[tuple[tuple[int, int], tuple[int, int]]]
) -> Callable[[ast.AST], bool]:
    """Whether a node is outside import fallbacks and release-gated ``if`` blocks.

    A node is inside a statement where it is written between the statement's first and
    last characters. ``gated``: the spans of the release-gated ``if`` statements (each
    test read once, :func:`_gate`).
    """
    spans = _spans(
        [n for n in by_type.get(ast.Try, ()) if any(map(catches_import_error, n.handlers))]  # type: ignore[attr-defined]
    )
    spans += gated
    if not spans:
        return lambda node: True

    def outside(node: ast.AST) -> bool:
        return not _inside(node, spans)

    return outside


def _gate(test: ast.expr, below: dict[ast.AST, list[ast.AST]] | None = None) -> bool:
    """Whether ``GATE`` finds a release gate in the ``if`` test ``test``'s code.

    ``ast.unparse`` writes the code back, a visitor that costs more than the whole
    walk of most files, for every ``if``. Every word ``GATE`` looks for is written by an
    identifier, an attribute, a keyword, a parameter or a string of the test, and its
    ``hasattr(X`` form by a ``hasattr`` call: those are looked at first, and only a test
    they may gate is written back and searched as before. ``below``: the tree's index
    of children (:class:`~codemods.syntax.ast_nodes.TreeIndex`), read in ``ast.walk``'s
    order.

    Example:
        >>> _gate(ast.parse("if v >= version.parse('2.4'): pass").body[0].test)
        True
        >>> _gate(ast.parse("if hasattr(torch.distributed, 'fsdp'): pass").body[0].test)
        True
        >>> _gate(ast.parse("if model.training and x > 2: pass").body[0].test)
        False
    """
    words: list[str] = []
    for node in ast.walk(test) if below is None else _breadth_first(test, below):
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


def _breadth_first(node: ast.AST, below: dict[ast.AST, list[ast.AST]]) -> Iterator[ast.AST]:
    """``ast.walk(node)`` through the index's children (its order: breadth first)."""
    queue = deque([node])
    while queue:
        node = queue.popleft()
        queue.extend(below[node])
        yield node
