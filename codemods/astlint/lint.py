"""Lint on the ``ast`` tree: :func:`lint` for the runner, :func:`detect` for one tree.

The detector itself is :mod:`codemods.astlint.detector` (what hooks ask and tell) and
:mod:`codemods.astlint.walk` (its pass); see there.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections import OrderedDict

from codemods.astlint.detector import Detector, Undecided
from codemods.astlint.walk import Walk
from codemods.findings import Finding
from codemods.screen.noqa import Suppressions
from codemods.settings import Settings

__all__ = ["Undecided", "detect", "found_on_ast", "last_detection", "lint"]

#: The last passes :func:`detect` made, kept for :func:`last_detection`: by source and
#: settings, the tree, detector and walk; at most :data:`KEEP_BYTES` of sources.
_kept: OrderedDict[tuple[bytes, Settings], tuple[ast.Module, Detector, Walk]] = OrderedDict()
KEEP_BYTES = 2**20


def lint(source: bytes, settings: Settings) -> list[Finding]:
    """What :func:`codemods.engine.run.run` finds in ``source`` when it fixes nothing, on ``ast``.

    With ``settings.fix``, what a fixing run finds where none of the fixes applies.

    Raises:
        Undecided: Where only the libcst engine decides (a construct the ``ast`` side
            does not model, a source ``ast`` cannot parse, one nested too deeply).
    """
    from codemods.screen import namescan, noqa

    suppressions = noqa.parse(source)
    if suppressions.everything:
        return []
    try:
        tree = namescan.parse(source)
        # ast accepts some bytes its columns cannot be mapped back from (a latin-1
        # comment without a coding cookie): libcst reports such a file as undecodable
        _decoded(source)
    except (SyntaxError, ValueError) as exc:
        raise Undecided("ast cannot parse it: libcst reports why") from exc
    try:
        return detect(source, settings, suppressions, tree)
    except RecursionError as exc:
        raise Undecided("nested too deeply") from exc


def found_on_ast(source: bytes, settings: Settings) -> list[Finding] | None:
    """The findings, where the ``ast`` detector decides them and nothing is to be fixed.

    A fixing run needs libcst only where a fix applies: where none does, its findings
    are lint's (none marked fixed) and the file stays as it is. None: libcst decides.
    """
    try:
        findings = lint(source, settings)
    except Undecided:
        return None
    if settings.fix and any(_applies(f, settings) for f in findings):
        return None  # libcst's: the pass just made is kept for its pruning
    _kept.pop((source, settings), None)
    return findings


def _applies(finding: Finding, settings: Settings) -> bool:
    """Whether a fixing run with ``settings`` fixes ``finding``."""
    from codemods.registry import REGISTRY

    applies = finding.fixable and settings.applies_fix(REGISTRY[finding.code])
    return applies and (not finding.unsafe or settings.unsafe_fixes)


def _decoded(source: bytes) -> str:
    """``source`` decoded as Python decodes a module (its coding cookie, else UTF-8)."""
    if source.isascii():
        return source.decode()
    encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    return source.decode(encoding)


def detect(
    source: bytes, settings: Settings, suppressions: Suppressions, tree: ast.Module | None = None
) -> list[Finding]:
    """The findings of a run on ``source``, sorted, as the libcst engine gives them.

    None is marked fixed: with ``settings.fix``, they are right only where no fix
    applies (see :func:`codemods.batch.runner.process_source`), and the file is unchanged.

    Raises:
        Undecided: Where the file holds something only the libcst engine decides.
        SyntaxError: Where ``ast`` cannot parse the source.
    """
    if tree is None:
        tree = ast.parse(source)
    detector = Detector(source, tree, settings, suppressions)
    walk = Walk(detector)
    walk.run()
    if settings.fix:  # a fixing run may prune this source next
        _keep(source, settings, (tree, detector, walk))
    return sorted(detector.findings)


def _keep(source: bytes, settings: Settings, detection: tuple[ast.Module, Detector, Walk]) -> None:
    """Keep a pass for :func:`last_detection`, dropping the oldest beyond the budget."""
    _kept[(source, settings)] = detection
    total = sum(len(key[0]) for key in _kept)
    while len(_kept) > 1 and total > KEEP_BYTES:
        (oldest, _), _ = _kept.popitem(last=False)
        total -= len(oldest)


def last_detection(source: bytes, settings: Settings) -> tuple[ast.Module, Detector, Walk] | None:
    """The tree, detector and walk of a recent :func:`detect` pass over ``source``, if any.

    A fixing run screens a file on ``ast`` (:func:`found_on_ast`) and then, in the same
    process, prunes it for libcst on the same detector pass (:mod:`codemods.engine.pruning`):
    this hands that pass over once, instead of parsing and detecting again. The last
    few passes are kept (a small run screens its files before it parses them).
    """
    return _kept.pop((source, settings), None)
