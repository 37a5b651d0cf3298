"""A fixing run's libcst pass over the parts of a module its fixes can reach.

libcst's parse and its scope, parent and position metadata are most of a fixing run's
time (benchmarks/README.md), and a file with one fix in it pays for all of its lines.
Only the code the ``ast`` detector saw something in needs them: :func:`survey`
replaces the body of every other function, for the libcst pass, by a placeholder
standing on the same lines: a tuple of the names the body reads, then a triple-quoted
string holding a mark, the body's number and the body's line breaks (``(torch, nn,
nn, config);`` then the string: ``fsdp-compat: pruned body 3`` and the line breaks).

The placeholder keeps what the pass can see of the body from outside it: its lines (so
every position after it is the same, and findings, ``noqa`` comments and messages keep
their lines), and the names it reads from the scopes around it, each as often as the
body reads it (an import only the body uses stays used; a name's count of uses stays
the same). :meth:`Pruned.restore` then puts each body's bytes back in place of its
placeholder.

A function is kept whole where the detector saw anything in it (a use or import of an
old name, a call a rule inspects, anything a rule reported on, silenced or not), where
it reads a module-level name bound by a statement the detector saw something in (a
rule may follow that name's uses: FSDP103's policy partials), where it declares
``global`` or ``nonlocal``, and inside a class a class rule reported on (its hook
looks at all of the class's methods). Only functions
at module level, in module-level blocks and in classes are replaced, never one inside a
kept function. Where the detector does not decide the file, where a placeholder does
not come back exactly once as written, or where little would be saved, the file is run
whole: the result is the same either way (``tests/test_pruning.py`` runs every fixture,
rule example and realistic module both ways).

:func:`survey` also gives the lines the detector saw something in (``hot``): the pass
enters only the statements on those lines, or with a rewrite registered inside, and
passes over the rest of a kept function (:meth:`codemods.engine.transformer.Engine.cold`). The
detector's pass is the one the screening made just before, where there is one. What a
body or statement reads and binds is :mod:`codemods.engine.tree_reads`.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass

from codemods.astlint.lint import Detection, detect
from codemods.engine.tree_reads import BLOCKS, FUNCTIONS, TreeReads, module_statements
from codemods.settings import Settings
from codemods.syntax.ast_nodes import Undecided
from codemods.syntax.spans import Lines, Spans

__all__ = ["Pruned", "Survey", "survey"]

#: Bodies of fewer lines are kept: a placeholder saves nothing on them.
MIN_BODY_LINES = 2
#: A file that would lose fewer lines than this runs whole.
MIN_SAVED_LINES = 40

_MARK = b"fsdp-compat: pruned body"
_LINE_BREAK = re.compile(rb"\r\n|\n")


@dataclass(frozen=True)
class Pruned:
    """A module with function bodies replaced by placeholders.

    Attributes:
        source: The module's bytes with the placeholders.
        regions: Each placeholder and the body bytes it stands for, in source order.
    """

    source: bytes
    regions: tuple[tuple[bytes, bytes], ...]

    def restore(self, new: bytes) -> bytes | None:
        r"""``new`` (the pass's output) with every body back; None: a placeholder changed.

        Example:
            >>> pruned = Pruned(b"def f():\\n    x\\n", ((b"x", b"return 1"),))
            >>> pruned.restore(b"def g():\\n    x\\n")
            b'def g():\\n    return 1\\n'
            >>> pruned.restore(b"def g():\\n    y\\n") is None
            True
        """
        out = new
        for placeholder, body in self.regions:
            if out.count(placeholder) != 1:
                return None
            out = out.replace(placeholder, body, 1)
        return out


@dataclass(frozen=True)
class Survey:
    """What the ``ast`` detector tells a fixing run's libcst pass about one module.

    Attributes:
        pruned: The module with its unreachable bodies replaced; None: run it whole.
        hot: The line spans of the nodes the detector saw something in (the same in
            the pruned module): the statements the pass must enter (see
            :meth:`codemods.engine.transformer.Engine.cold`).
    """

    pruned: Pruned | None
    hot: Spans


def survey(source: bytes, settings: Settings, detection: Detection | None = None) -> Survey | None:
    """The pruned module and its hot spans; None where the detector does not decide it.

    ``detection``: the detector's pass over ``source`` where the screening made one
    (:attr:`codemods.astlint.lint.Screened.detection`); else the pass is made here.
    """
    if _MARK in source or not _plain_utf8(source):
        return None
    from codemods.screen import noqa

    try:
        if detection is None:
            suppressions = noqa.parse(source)
            if suppressions.everything:
                return None
            detection = detect(source, settings, suppressions)
        pruner = _Pruner(source, detection.tree, detection.detector, detection.walk)
        return Survey(pruner.run(), pruner.hot())
    except (Undecided, SyntaxError, ValueError, RecursionError, AttributeError):
        return None


def _plain_utf8(source: bytes) -> bool:
    """UTF-8 without a BOM or a lone CR: ``ast``'s byte columns are the file's bytes."""
    if source.startswith(b"\xef\xbb\xbf") or re.search(rb"\r(?!\n)", source):
        return False
    if source.isascii():
        return True
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        source.decode("utf-8")
    except (SyntaxError, UnicodeDecodeError):
        return False
    return encoding == "utf-8"


class _Pruner(TreeReads):
    """Which bodies to replace in one module, and the module with them replaced."""

    def __init__(self, source: bytes, tree: ast.Module, detector, walk) -> None:
        self.source = source
        self.tree = tree
        super().__init__(tree, detector.names)
        self.lines = source.splitlines(keepends=True)
        starts, total = [], 0
        for line in self.lines:
            starts.append(total)
            total += len(line)
        self.starts = starts
        self.detector = detector
        self.seen = _seen(detector, walk)
        self.spans = sorted({(n.lineno, n.end_lineno or n.lineno) for n in self.seen})
        self._lines = Lines(self.spans)
        codes = _class_rules(detector)
        self.class_reports = Lines(
            (n.lineno, n.end_lineno or n.lineno) for n, code in detector.reported if code in codes
        )

    # Where the detector saw something ----------------------------------------------

    def _hit(self, first: int, last: int) -> bool:
        """Whether a seen span overlaps lines ``first`` to ``last``."""
        return self._lines.meet(first, last)

    def hot(self) -> Spans:
        """The seen spans, and every class's first line where a class rule is on.

        A class rule's hook learns the file's classes as the visit leaves each one (a
        subclass of a subclass of ``LightningModule``), so the visit enters them all.
        """
        spans = list(self.spans)
        if _class_rules(self.detector):
            spans += ((n.lineno, n.lineno) for n in self.detector.nodes(ast.ClassDef))
        return tuple(sorted(set(spans)))

    # The candidates -------------------------------------------------------------------

    def run(self) -> Pruned | None:
        candidates: list[tuple[ast.stmt, object]] = []
        self._collect(self.tree.body, candidates, self.names.module)
        reads = {}
        for definition, outer in candidates:
            if not self._kept_alone(definition):
                found = self.reads(definition, outer)
                if found is not None:
                    reads[id(definition)] = (definition, found)
        followed = self._followed()
        changed = True
        while changed:  # a kept definition's name can make another one's reads count
            changed = False
            for key, (definition, found) in list(reads.items()):
                if followed & set(found):
                    del reads[key]
                    followed.add(definition.name)
                    changed = True
        chosen = sorted((d for d, _ in reads.values()), key=lambda d: d.lineno)
        return self._replaced(chosen, {id(d): r for d, r in reads.values()})

    def _collect(self, body: list[ast.stmt], into: list, outer: object) -> None:
        """The definitions whose bodies may go, with the scope each is defined in.

        A module-level class nothing was seen in goes whole; in another class, its
        functions do, unless a class rule reported on it.
        """
        for statement in body:
            kind = type(statement)
            if kind in FUNCTIONS:
                into.append((statement, self.names.scope_of.get(statement)))
            elif kind is ast.ClassDef:
                first, last = _first_line(statement), statement.end_lineno
                if not self._hit(first, last) and outer is self.names.module:
                    into.append((statement, outer))
                elif not self.class_reports.meet(first, last):
                    self._collect(statement.body, into, None)
            else:
                for field in BLOCKS:
                    for child in getattr(statement, field, ()) or ():
                        if type(child) is ast.ExceptHandler:
                            self._collect(child.body, into, outer)
                        elif isinstance(child, ast.stmt):
                            self._collect([child], into, outer)

    def _kept_alone(self, definition: ast.stmt) -> bool:
        """Kept whatever the others do: seen, short, declaring, or laid out oddly."""
        first, last = _first_line(definition), definition.end_lineno
        if self._hit(first, last):
            return True
        body = definition.body
        start = _first_line(body[0])
        if body[-1].end_lineno - start + 1 < MIN_BODY_LINES:
            return True
        if any(type(n) in (ast.Global, ast.Nonlocal) for s in body for n in self.walk(s)):
            return True
        return self._body_start(definition) is None

    def _body_start(self, definition: ast.stmt) -> int | None:
        """The byte offset where the body starts, if it starts a line of its own."""
        first = definition.body[0]
        line_number = _first_line(first)
        if line_number <= definition.lineno:
            return None
        line = self.lines[line_number - 1]
        indent = len(line) - len(line.lstrip(b" \t"))
        decorators = getattr(first, "decorator_list", None)
        if decorators:
            if line[indent : indent + 1] != b"@":
                return None
        elif first.col_offset != indent:
            return None
        return self.starts[line_number - 1] + indent

    def _followed(self) -> set[str]:
        """Module-level names seen or bound where the detector saw something, and more.

        A rule may follow such a name to its uses (a policy partial to the wrapper
        calls, a policy function's renamed parameter to its calls, a config to every
        place it is passed), so a function that reads one is kept; a module-level
        statement or definition that reads one binds followed names in turn.
        """
        statements = list(module_statements(self.tree.body))
        reads = {id(s): self.read(s) for s in statements}
        # What a seen node reads of the module's own variables (a state-dict config): a
        # rule may look at all their uses. (A class or function: at its binding only.)
        own = set().union(
            *(self.bound(s) for s in statements if type(s) not in (*FUNCTIONS, ast.ClassDef))
        )
        followed = {
            n.id
            for node in self.seen
            for n in self.walk(node)
            if type(n) is ast.Name and type(n.ctx) is ast.Load and n.id in own
        }
        changed = True
        while changed:
            changed = False
            for statement in statements:
                bound = self.bound(statement)
                if not bound or bound <= followed:
                    continue
                seen = self._hit(_first_line(statement), statement.end_lineno)
                if seen or followed & reads[id(statement)]:
                    followed |= bound
                    changed = True
        return followed

    # The replacement -------------------------------------------------------------------

    def _replaced(self, chosen: list, reads: dict[int, list[str]]) -> Pruned | None:
        pieces: list[bytes] = []
        regions: list[tuple[bytes, bytes]] = []
        position = saved = 0
        for index, definition in enumerate(chosen):
            start = self._body_start(definition)
            last = definition.body[-1]
            end = self.starts[last.end_lineno - 1] + last.end_col_offset
            body = self.source[start:end]
            breaks = b"".join(_LINE_BREAK.findall(body))
            names = reads[id(definition)]
            head = b"(" + b", ".join(n.encode() for n in names) + b",); " if names else b""
            placeholder = head + b'"""' + _MARK + b" %d" % index + breaks + b'"""'
            pieces += [self.source[position:start], placeholder]
            regions.append((placeholder, body))
            position = end
            saved += len(breaks)
        if not regions or saved < MIN_SAVED_LINES:
            return None
        pieces.append(self.source[position:])
        return Pruned(b"".join(pieces), tuple(regions))


def _seen(detector, walk) -> list[ast.AST]:
    """The nodes the detector saw something in."""
    from codemods.astlint.scopes import dotted
    from codemods.rules.api import PARTIAL
    from codemods.rules.index import INDEX

    nodes = list(detector.touched)
    for event in walk.events:
        kind, node = event[0], event[1]
        if kind == "ref" or (kind == "import" and detector.imported(node)):
            nodes.append(node)
        elif kind == "call" and dotted(node.func) is not None:
            names = detector.qualified(node.func)
            if PARTIAL in names or any(n in INDEX.calls for n in names):
                nodes.append(node)
    return nodes


def _class_rules(detector) -> set[str]:
    """The codes of the enabled rules that look at classes (a Lightning hook's name)."""
    from codemods.rules.index import INDEX

    return {rule.code for rule in INDEX.classes.rules if detector.settings.enabled(rule)}


def _first_line(node: ast.stmt) -> int:
    """The statement's first line, its decorators included."""
    decorators = getattr(node, "decorator_list", None) or ()
    return min([node.lineno, *(d.lineno for d in decorators)])
