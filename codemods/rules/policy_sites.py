"""Where a policy partial goes (FSDP103, FSDP104), and what a fix there promises.

A partial that does not certainly reach a consumer taking policy objects has a
:class:`Site`; :func:`verdict` decides from it whether the fix is made and whether it is
unsafe there, and :func:`unsafe_detail` says, in the finding, what an unsafe one changes.
"""

from __future__ import annotations

from codemods.records import Frozen
from codemods.registry import Rule

#: The torch release whose ``ModuleWrapPolicy`` is callable like the policy function it
#: replaces (the ``module_wrap_policy`` capability's note).
CALLABLE_SINCE = "2.2"

#: Where a partial goes that does not certainly reach a policy consumer (:class:`Site`).
UNREAD, RETURNED, MODULE, CALLED, ELSEWHERE = "unread", "returned", "module", "called", "elsewhere"
PASSED = "passed"
#: A partial in the ``policies`` of torch's ``_or_policy``, which calls each like a policy.
COMBINED = "combined"


class Site(Frozen):
    """Where a policy partial goes, where it does not certainly reach a consumer.

    Attributes:
        kind: ``UNREAD`` (a local name nothing reads), ``RETURNED`` (returned by the
            function ``name``, alone or in a tuple), ``MODULE`` (a module-level name,
            which other modules may import), ``CALLED`` (a local name every use of
            which is a policy consumer's or a call, the first on ``line``) or
            ``ELSEWHERE`` (the name is used on ``line`` where the fix cannot follow it)
            or ``PASSED`` (an argument of ``name``, a callable the fix does not know to
            take policy objects) or ``COMBINED`` (one of the ``policies`` of the
            ``_or_policy`` on ``line``, which calls each; ``name`` empty where the
            partial is written there).
        name: The variable, the returning function, or the callable it is passed to.
        line: The first call (``CALLED``), or the use the fix cannot follow.
    """

    __slots__ = _fields = ("kind", "name", "line")

    def __init__(self, kind: str, name: str, line: int = 0) -> None:
        self._set(kind=kind, name=name, line=line)


def verdict(rule: Rule, site: Site | None, callable_here: bool) -> tuple[bool, bool, str | None]:
    """Whether the fix is made at ``site``, whether it is unsafe there, and why not.

    ``ModuleWrapPolicy`` answers both uses of the partial, as ``auto_wrap_policy=`` and
    called with the policy's arguments, from torch 2.2 (``callable_here``: the range
    starts there). Where the file shows every use, that is certain; a policy passed on
    to code it does not show (imported or returned elsewhere) gets an unsafe fix: it is
    no longer a ``functools.partial``.

    Example:
        >>> from codemods.registry import REGISTRY
        >>> rule = REGISTRY["FSDP103"]
        >>> verdict(rule, Site(RETURNED, "get_wrapper"), True)
        (True, True, None)
        >>> print(verdict(rule, Site(RETURNED, "get_wrapper"), False)[2])
        the policy is returned to the callers of `get_wrapper()`, which this file does not all show: `ModuleWrapPolicy` is called like the partial only from torch 2.2
    """  # noqa: E501
    new = (rule.new or "").rpartition(".")[2]
    if site is None:
        return False, False, None
    if site.kind == UNREAD:
        why = f"the policy is assigned to `{site.name}`, which nothing reads"
        return False, False, f"{why}: a human decides whether it is still needed"
    if site.kind == ELSEWHERE:
        why = f"`{site.name}` is used on line {site.line}, where the fix cannot tell"
        return False, False, f"{why} whether a `{new}` object would do"
    if site.kind == PASSED:
        why = f"the policy is passed to `{site.name}()`, which the fix does not know to take"
        return False, False, f"{why} a `{new}` object"
    if rule.code == "FSDP103" and callable_here:
        return True, site.kind not in (CALLED, COMBINED), None
    where = _where(site)
    if rule.code != "FSDP103":
        return False, False, f"{where}: a `{new}` object cannot be called like the partial"
    since = f"`{new}` is called like the partial only from torch {CALLABLE_SINCE}"
    return False, False, f"{where}: {since}"


def lasting(rule: Rule, site: Site | None) -> bool:
    """Whether :func:`verdict`'s reason at ``site`` holds on every torch release.

    No ``CustomPolicy`` is called like the partial it would replace, so where the
    partial is called (or may be), FSDP104's advice does not fit the site at all: the
    reason belongs in the finding's text, not only where the releases allow the fix.

    Example:
        >>> from codemods.registry import REGISTRY
        >>> site = Site(COMBINED, "lam", 8)
        >>> lasting(REGISTRY["FSDP104"], site), lasting(REGISTRY["FSDP103"], site)
        (True, False)
    """
    return (
        site is not None
        and rule.code != "FSDP103"
        and site.kind in (CALLED, COMBINED, MODULE, RETURNED)
    )


def _where(site: Site) -> str:
    if site.kind == CALLED:
        return f"`{site.name}` is called on line {site.line}"
    if site.kind == COMBINED:
        policy = f"`{site.name}`" if site.name else "the policy"
        return f"{policy} goes to `_or_policy` on line {site.line}, which calls each policy"
    if site.kind == MODULE:
        return f"`{site.name}` is a module-level policy that other modules may import"
    where = f"the policy is returned to the callers of `{site.name}()`, which this file"
    return where + " does not all show"


def unsafe_detail(rule: Rule, site: Site) -> str:
    """What the unsafe fix at ``site`` changes, for its finding.

    Example:
        >>> from codemods.registry import REGISTRY
        >>> print(unsafe_detail(REGISTRY["FSDP103"], Site(MODULE, "policy")))
        unsafe: `policy` is a module-level policy that other modules may import; they get a `ModuleWrapPolicy`, called like the partial and taken by `auto_wrap_policy=` from torch 2.2, but no `functools.partial` (no `.func`, `.args` or `.keywords`)
    """  # noqa: E501
    new = (rule.new or "").rpartition(".")[2]
    return (
        f"unsafe: {_where(site)}; they get a `{new}`, called like the partial and taken by "
        f"`auto_wrap_policy=` from torch {CALLABLE_SINCE}, but no `functools.partial` "
        "(no `.func`, `.args` or `.keywords`)"
    )
