"""Lint on the ``ast`` tree: :func:`screen` for the runner, :func:`lint` for one tree.

The detector itself is :mod:`codemods.astlint.detector` (what hooks ask and tell) and
:mod:`codemods.astlint.walk` (its pass); see there. What a screening learns is handed
on as values: the tree the pre-filter parsed comes in as an argument, and the pass a
fixing run's libcst stage reuses for its pruning goes out in :class:`Screened`.
"""

from __future__ import annotations

import ast
import io

from codemods.astlint.detector import Detector, Undecided
from codemods.astlint.walk import Walk
from codemods.findings import Finding
from codemods.records import Frozen
from codemods.screen.noqa import Deferred, Suppressions
from codemods.settings import Settings
from codemods.syntax.alias_positions import parse

__all__ = ["Detection", "Screened", "Undecided", "detect", "found_on_ast", "lint", "screen"]


class Detection(Frozen):
    """One pass of the ``ast`` detector over a module.

    Attributes:
        tree: The module.
        detector: What the hooks asked and reported.
        walk: The pass's record of what it met, in order.
        findings: Sorted, none marked fixed.
    """

    __slots__ = _fields = ("tree", "detector", "walk", "findings")

    tree: ast.Module
    detector: Detector
    walk: Walk
    findings: list[Finding]

    def __init__(
        self,
        tree: ast.Module,
        detector: Detector,
        walk: Walk,
        findings: list[Finding],
    ) -> None:
        self._set(tree=tree, detector=detector, walk=walk, findings=findings)


class Screened(Frozen):
    """What the ``ast`` side makes of a module, for the runner.

    Attributes:
        findings: The findings, where the detector decides them and nothing is to be
            fixed (the file stays as it is); None: the libcst engine decides.
        detection: In a fixing run where a fix applies, the pass the engine's pruning
            reuses (:func:`codemods.engine.pruning.survey`); else None.
    """

    __slots__ = _fields = ("findings", "detection")

    findings: list[Finding] | None
    detection: Detection | None

    def __init__(self, findings: list[Finding] | None, detection: Detection | None = None) -> None:
        self._set(findings=findings, detection=detection)


def lint(source: bytes, settings: Settings, tree: ast.Module | None = None) -> list[Finding]:
    """What :func:`codemods.engine.run.run` finds in ``source`` when it fixes nothing, on ``ast``.

    With ``settings.fix``, what a fixing run finds where none of the fixes applies.
    ``tree``: ``ast.parse(source)``, where the caller has it.

    Raises:
        Undecided: Where only the libcst engine decides (a construct the ``ast`` side
            does not model, a source ``ast`` cannot parse, one nested too deeply).
    """
    found = _pass(source, settings, tree)
    return [] if found is None else found.findings


def _pass(source: bytes, settings: Settings, tree: ast.Module | None) -> Detection | None:
    """The detector's pass over ``source``; None where ``noqa`` silences the whole file."""
    from codemods.screen import noqa

    suppressions = noqa.Deferred(source)  # read where a finding asks
    if suppressions.everything:
        return None
    try:
        if tree is None:
            tree = parse(source)
        suppressions.tree = tree  # its strings place the comments, without the tokenizer
        # ast accepts some bytes its columns cannot be mapped back from (a latin-1
        # comment without a coding cookie): libcst reports such a file as undecodable
        _decoded(source)
    except (SyntaxError, ValueError) as exc:
        raise Undecided("ast cannot parse it: libcst reports why") from exc
    try:
        return detect(source, settings, suppressions, tree)
    except RecursionError as exc:
        raise Undecided("nested too deeply") from exc


def screen(source: bytes, settings: Settings, tree: ast.Module | None = None) -> Screened:
    """The findings where the ``ast`` detector decides them and nothing is to be fixed.

    A fixing run needs libcst only where a fix applies: where none does, its findings
    are lint's (none marked fixed) and the file stays as it is.
    """
    try:
        found = _pass(source, settings, tree)
    except Undecided:
        return Screened(None)
    if found is None:
        return Screened([])
    if settings.fix and any(_applies(f, settings) for f in found.findings):
        return Screened(None, found)
    return Screened(found.findings)


def found_on_ast(
    source: bytes, settings: Settings, tree: ast.Module | None = None
) -> list[Finding] | None:
    """:attr:`Screened.findings` of :func:`screen`: None where libcst decides."""
    return screen(source, settings, tree).findings


def _applies(finding: Finding, settings: Settings) -> bool:
    """Whether a fixing run with ``settings`` fixes ``finding``."""
    from codemods.registry import REGISTRY

    return settings.fixes(REGISTRY[finding.code], finding)


def _decoded(source: bytes) -> str:
    """``source`` decoded as Python decodes a module (its coding cookie, else UTF-8)."""
    if source.isascii():
        return source.decode()
    import tokenize  # here: most sources are ASCII, and a hook's run then never needs it

    encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    return source.decode(encoding)


def detect(
    source: bytes,
    settings: Settings,
    suppressions: Suppressions | Deferred,
    tree: ast.Module | None = None,
) -> Detection:
    """The detector's pass over ``source``: its findings sorted, as the libcst engine gives them.

    None is marked fixed: with ``settings.fix``, they are right only where no fix
    applies (see :func:`codemods.batch.runner.process_source`), and the file is unchanged.

    Raises:
        Undecided: Where the file holds something only the libcst engine decides.
        SyntaxError: Where ``ast`` cannot parse the source.
    """
    if tree is None:
        tree = parse(source)
    detector = Detector(source, tree, settings, suppressions)
    walk = Walk(detector)
    walk.run()
    return Detection(tree, detector, walk, sorted(detector.findings))
