"""Run the engine on one module's source: parse, visit, finish imports, write bytes."""

from __future__ import annotations

from dataclasses import dataclass, field

from libcst.metadata import MetadataWrapper

from codemods.astlint.lint import Detection, found_on_ast
from codemods.engine.imports.finish import finish
from codemods.engine.metadata.scopes import prime
from codemods.engine.transformer import Engine
from codemods.findings import Finding
from codemods.screen import noqa
from codemods.settings import Settings
from codemods.syntax.lazy_libcst import cst
from codemods.syntax.spans import Spans
from codemods.verify.check import breakages

#: A fixing run repeats its pass until nothing changes, at most this many times (as
#: ruff's fix loop does): one fix can make another possible (a renamed strategy whose
#: policy partial is then certain to reach it).
MAX_PASSES = 5


@dataclass
class Outcome:
    """What the engine made of one source.

    Attributes:
        findings: Sorted findings.
        new_source: The rewritten bytes, or None when nothing changed.
    """

    findings: list[Finding] = field(default_factory=list)
    new_source: bytes | None = None


def run(
    source: bytes,
    settings: Settings,
    filename: str = "<string>",
    prune: bool = True,
    detection: Detection | None = None,
) -> Outcome:
    """Lint (and with ``settings.fix``, migrate) one module's source.

    A fixing run gives libcst only the functions its fixes can reach, and its first pass
    enters only the statements the ``ast`` detector saw something in (``prune``, see
    :mod:`codemods.engine.pruning`); the outcome is the same as the whole file's.

    A fixing run repeats its pass on the rewritten source until a pass changes nothing
    (at most :data:`MAX_PASSES`; a pass is skipped where :func:`_settled` tells it would
    change nothing), so a second run is a no-op. The findings are those of
    the first pass, each marked fixed if a pass fixed it. The rewrite is then checked
    (:func:`codemods.verify.check.breakages`): if it would leave a name undefined, an import
    unused, or an old name in use, no fix is written and each finding a fix would have
    handled says why (``withheld``).

    ``detection``: the ``ast`` detector's pass over ``source``, where the screening
    made one (:attr:`codemods.astlint.lint.Screened.detection`): the pruning reuses it.

    Raises:
        libcst.ParserSyntaxError: If the source does not parse.
    """
    # A companion's checks (FSDP401) are nothing the ``ast`` detector sees: run it whole.
    if settings.fix and prune and not settings.fsdp1_companion:
        from codemods.engine.pruning import survey

        found = survey(source, settings, detection)
        if found is not None:
            pruned = found.pruned
            outcome = _run(
                source if pruned is None else pruned.source, settings, filename, found.hot
            )
            if pruned is None or outcome.new_source is None:
                return outcome
            restored = pruned.restore(outcome.new_source)
            if restored is not None:
                return Outcome(outcome.findings, restored)
    return _run(source, settings, filename)


def _run(source: bytes, settings: Settings, filename: str, hot: Spans | None = None) -> Outcome:
    """:func:`run` on the source as it is; ``hot``: the first pass enters only those lines."""
    findings, new, renamed = _one_pass(source, settings, filename, hot)
    if not settings.fix or new is None:
        return Outcome(findings, new)
    current = new
    for _ in range(MAX_PASSES - 1):
        if _settled(current, settings):
            break
        later, rewritten, more = _one_pass(current, settings, filename)
        if rewritten is None:
            break
        findings = _merge(findings, later)
        renamed.update(more)
        current = rewritten
    if current == source:
        return Outcome(findings, None)
    broken = breakages(source, current, renamed, reexports=filename.endswith("__init__.py"))
    if broken:
        reason = f"fix withheld: {broken[0]}"
        return Outcome([_withhold(f, reason) for f in findings], None)
    return Outcome(findings, current)


def _settled(source: bytes, settings: Settings) -> bool:
    """Whether another pass over ``source`` would certainly change nothing.

    That is where the ``ast`` detector decides the file and finds no fix to apply: the
    test a fixing run already makes before it parses a file with libcst at all
    (:func:`codemods.astlint.lint.found_on_ast`), here saving the confirming pass, as costly
    as the one that rewrote the file.
    """
    return found_on_ast(source, settings) is not None


def _withhold(finding: Finding, reason: str) -> Finding:
    if not finding.fixed:
        return finding
    return finding.replace(fixed=False, withheld=reason)


def _merge(first: list[Finding], later: list[Finding]) -> list[Finding]:
    """The first pass's findings, marked fixed where a later pass fixed them.

    A later pass sees the rewritten source, whose positions may differ: its fix counts
    for the first unfixed finding of the same rule, preferring the same line.
    """
    merged = list(first)
    for fix in (f for f in later if f.fixed):
        open_ = [i for i, f in enumerate(merged) if f.code == fix.code and not f.fixed]
        if not open_:
            continue  # found only after an earlier fix (its finding is that fix's)
        index = next((i for i in open_ if merged[i].line == fix.line), open_[0])
        merged[index] = merged[index].replace(fixable=True, fixed=True)
    return merged


def _one_pass(
    source: bytes, settings: Settings, filename: str, hot: Spans | None = None
) -> tuple[list[Finding], bytes | None, dict[str, str]]:
    """One visit: the findings, the rewritten bytes (None: unchanged), local renames.

    ``hot``: the line spans the ``ast`` detector saw something in; the visit passes
    over the statements outside them (:meth:`codemods.engine.transformer.Engine.cold`).
    """
    suppressions = noqa.parse(source)
    if suppressions.everything:
        return [], None, {}
    module = cst.parse_module(source)
    engine = Engine(settings, suppressions, hot)
    text = _text(source, module)
    engine.text = module.code if text is None else text  # (libcst decoded it: always text)
    # No copy of the module: libcst's nodes are immutable and the visit builds a new tree.
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    prime(wrapper)  # the contexts and scopes, quicker than libcst's resolver
    new = wrapper.visit(engine)
    if not settings.fix:
        return sorted(engine.findings), None, {}
    if engine.edits:
        new = finish(engine.edits, wrapper, new, filename, text)
    final = _no_new_leading_blank_lines(module, new)
    new_bytes = engine.code_for(final).encode(final.encoding)
    changed = new_bytes if new_bytes != source else None
    return sorted(engine.findings), changed, dict(engine.edits.local_renames)


def _text(source: bytes, module: cst.Module) -> str | None:
    """The module's code, from its bytes where they decode (libcst parsed them so)."""
    try:
        return source.decode(module.encoding)
    except (LookupError, UnicodeDecodeError):
        return None


def _no_new_leading_blank_lines(original: cst.Module, new: cst.Module) -> cst.Module:
    """``new`` without the blank lines a removed first import left at the top of the file."""
    if not (original.body and new.body) or original.body[0].leading_lines:
        return new
    first = new.body[0]
    if first.leading_lines and all(line.comment is None for line in first.leading_lines):
        return new.with_changes(body=[first.with_changes(leading_lines=()), *new.body[1:]])
    return new
