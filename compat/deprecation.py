"""The project's warning category and the one helper that emits it from a registry rule.

Example:
    >>> import warnings
    >>> from compat.deprecation import FSDPDeprecationWarning, warn_deprecated
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_deprecated("FSDP101")
    >>> caught[0].category is FSDPDeprecationWarning
    True
    >>> print(caught[0].message)  # doctest: +ELLIPSIS
    torch.distributed.fsdp.wrap.default_auto_wrap_policy is deprecated since torch 1.12...
"""

from __future__ import annotations

import abc
import contextlib
import os
import sys
import types
import warnings
from collections.abc import Sequence

import codemods.registry
from codemods.registry.names import LIGHTNING_PACKAGES

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from codemods.registry import Rule
    from codemods.releases import Releases
    from codemods.rules.call_blockers import Argument

# The rules, the releases and the call verdicts are imported at the first warning: a
# program run by `python -m compat` that uses no legacy name never loads them.

# Frames in these packages are library plumbing between the user's line and ours.
_LIBRARY_PACKAGES = ("torch", *LIGHTNING_PACKAGES, "fairscale")
_COMPAT_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
# A legacy context manager warns from inside contextlib's __enter__, a legacy class's
# subclass from inside abc's ABCMeta.__new__ (a file before Python 3.11 froze abc): not
# the user's line.
_PLUMBING_FILES = (contextlib.__file__, abc.__file__)

# (code, detail, filename, lineno) of every call site already warned about.
_warned_sites: set[tuple[str, str | None, str, int]] = set()


class FSDPDeprecationWarning(FutureWarning):
    """A legacy FSDP, Lightning or FairScale spelling was used through ``compat``.

    A :class:`FutureWarning` subclass, so end users see it by default (plain
    :class:`DeprecationWarning` is hidden outside ``__main__`` and test runners).
    """


def deprecation_message(
    rule: Rule,
    detail: str | None = None,
    withheld: Sequence[str] | None = None,
    releases: Releases | None = None,
) -> str:
    """Compose the warning text for ``rule``.

    The text says what is deprecated, since which release, what to write instead (the
    rule's message), and how the codemod handles it.

    Args:
        rule: The registry rule that the legacy spelling falls under.
        detail: Extra context for this call site, appended before the code.
        withheld: Why the codemod leaves this call for a human, where it does.
        releases: The releases the calling file runs on
            (:func:`compat.project_releases.file_releases`): where the rule's new form
            does not run on all of them, the text says migrate leaves the call, and why.

    Returns:
        The full message.

    Example:
        >>> from codemods.registry import REGISTRY
        >>> print(deprecation_message(REGISTRY["FSDP102"]))  # doctest: +NORMALIZE_WHITESPACE
        size_based_auto_wrap_policy(unwrapped_params=...) is deprecated since torch 2.0:
        the policy argument `unwrapped_params` is now `nonwrapped_numel`.
        `python -m codemods.migrate PATH` rewrites it. [FSDP102]
        >>> why = ["`verbose` has no torch FSDP meaning"]
        >>> print(deprecation_message(REGISTRY["FSDP301"], withheld=why))
        ... # doctest: +NORMALIZE_WHITESPACE
        fairscale.nn.FullyShardedDataParallel is deprecated since torch 1.11: FairScale's
        `FullyShardedDataParallel` is archived; use torch's. `python -m codemods.migrate
        --unsafe-fixes PATH` leaves this call for a human: `verbose` has no torch FSDP
        meaning. [FSDP301]
    """
    from codemods.registry import ChangeKind

    when = rule.deprecated or rule.introduced
    release = f"{rule.version_framework.display} {when}"
    if rule.opt_in:  # advice: the old form is not deprecated upstream
        head = f"{rule.short_old_spelling} has a successor since {release}"
    elif rule.kind is ChangeKind.DEFAULT_CHANGE:
        head = f"{rule.short_old_spelling} relies on a default that changed in {release}"
    elif when:
        head = f"{rule.short_old_spelling} is deprecated since {release}"
        if rule.removed and rule.removed != when:
            head += f" (removed in {rule.removed})"
    else:  # a spelling that only compat ever offered
        head = f"{rule.short_old_spelling} is deprecated in compat"
    hint = _TOOL_HINT[rule.fix.value]
    breaks = releases.breaks(rule) if releases is not None and rule.fixable else ""
    if breaks:
        hint = f"{_MIGRATE[rule.fix.value]} leaves it where the file runs: {breaks}."
    elif withheld:
        hint = f"{_MIGRATE[rule.fix.value]} leaves this call for a human: {'; '.join(withheld)}."
    parts = [f"{head}: {rule.message}.", hint]
    if detail:
        parts.append(detail)
    parts.append(f"[{rule.code}]")
    return " ".join(parts)


# By FixSafety's value.
_MIGRATE = {
    "safe": "`python -m codemods.migrate PATH`",
    "unsafe": "`python -m codemods.migrate --unsafe-fixes PATH`",
    "manual": "`python -m codemods.migrate PATH`",
}
_TOOL_HINT = {
    "safe": f"{_MIGRATE['safe']} rewrites it.",
    "unsafe": f"{_MIGRATE['unsafe']} rewrites it; review the change.",
    "manual": f"{_MIGRATE['manual']} lists every place that needs this change.",
}


def warn_deprecated(
    code: str, *, detail: str | None = None, arguments: Sequence[Argument] | None = None
) -> None:
    """Emit :class:`FSDPDeprecationWarning` for registry rule ``code`` at the user's line.

    The warning is attributed to the first frame outside ``compat`` and outside the
    libraries it wraps (torch, Lightning, FairScale), so it points at the user's call
    even when torch's FSDP calls a legacy policy on the user's behalf. Each call site
    warns once per rule and detail, whatever the warning filters say.

    Args:
        code: The registry rule code, e.g. ``"FSDP102"``.
        detail: Extra context for this call site.
        arguments: For a rule whose fix decides call by call (FSDP301, FSDP202), the
            call's arguments as compat received them: the warning then says what
            ``migrate`` does with this call (:mod:`compat.call_source`).

    Raises:
        KeyError: If ``code`` is not in the registry.
    """
    from compat.call_source import migrate_blockers

    frame = _user_frame()
    if frame is None:  # called from library code only; fall back to the direct caller
        withheld = migrate_blockers(code, None, arguments)
        warnings.warn(_message(code, detail, withheld), FSDPDeprecationWarning, stacklevel=2)
        return
    site = (code, detail, frame.f_code.co_filename, frame.f_lineno)
    if site in _warned_sites:
        return
    _warned_sites.add(site)
    filename = frame.f_code.co_filename
    message = _message(code, detail, migrate_blockers(code, frame, arguments), filename)
    warnings.warn_explicit(
        message,
        FSDPDeprecationWarning,
        frame.f_code.co_filename,
        frame.f_lineno,
        module=frame.f_globals.get("__name__", "<unknown>"),
        registry=frame.f_globals.setdefault("__warningregistry__", {}),
    )


def _message(
    code: str,
    detail: str | None,
    withheld: Sequence[str] | None = None,
    filename: str | None = None,
) -> str:
    from compat.project_releases import file_releases

    rule = codemods.registry.REGISTRY[code]  # looked up now: a test may add a rule
    releases = file_releases(filename) if filename else None
    return deprecation_message(rule, detail, withheld, releases)


def reset_warned_sites() -> None:
    """Forget which call sites have warned (for tests that warn from one line twice)."""
    _warned_sites.clear()


def _user_frame() -> types.FrameType | None:
    skip = _library_dirs()
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        # Frozen stdlib frames (importlib for imports, abc for class creation) are plumbing.
        if (
            not filename.startswith("<frozen ")
            and not filename.startswith(skip)
            and filename not in _PLUMBING_FILES
        ):
            return frame
        frame = frame.f_back
    return None


def _library_dirs() -> tuple[str, ...]:
    dirs = [_COMPAT_DIR]
    for name in _LIBRARY_PACKAGES:
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path:
            dirs.append(os.path.dirname(os.path.abspath(path)) + os.sep)
    return tuple(dirs)
