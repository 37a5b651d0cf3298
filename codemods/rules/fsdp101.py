"""FSDP101: ``default_auto_wrap_policy`` renamed ``size_based_auto_wrap_policy``.

A plain rename for torch's name. compat's policies of that name, called without a
module, return a policy with its threshold bound; moving them to torch's name means
writing those calls the way torch takes them (shared with FSDP113).
"""

from __future__ import annotations

from codemods.registry.names import COMPAT_WRAP
from codemods.rules.api import CallSiteFix, Site, Translation
from codemods.rules.kinds.reference import Renamed
from codemods.syntax import ast_nodes as on_ast
from codemods.syntax.cst_nodes import keyword
from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from codemods.rules.api import AstSite

#: compat's size-based policies: called without a module they return a bound policy.
_COMPAT_SIZE_POLICIES = (
    f"{COMPAT_WRAP}.size_based_auto_wrap_policy",
    f"{COMPAT_WRAP}.default_auto_wrap_policy",
)
#: compat's spellings of the size threshold; torch calls it ``min_num_params``.
_THRESHOLDS = ("min_nonwrapped_numel", "min_num_params")
_FACTORY_KEYWORDS = {*_THRESHOLDS, "force_leaf_modules", "exclude_wrap_modules"}


def _threshold_named_for_torch(updated: cst.Arg) -> cst.Arg:
    if keyword(updated) in _THRESHOLDS:
        return updated.with_changes(keyword=cst.Name("min_num_params"))
    return updated


def size_policy_arguments(site: Site) -> Translation | None:
    r"""Calls of compat's size-based policies written for torch's.

    ``size_based_auto_wrap_policy(min_nonwrapped_numel=N)`` (compat's factory form)
    becomes ``partial(size_based_auto_wrap_policy, min_num_params=N)``; in direct calls
    and ``partial``\\ s the threshold is renamed ``min_num_params``. torch's own names
    keep their calls.
    """
    if site.old not in _COMPAT_SIZE_POLICIES:
        return Translation(list(site.updated.args))
    pairs = site.pairs
    if any(o.star for o, _ in pairs):
        return None
    args = [_threshold_named_for_torch(u) for _, u in pairs]
    if site.partial:
        return Translation([site.updated.args[0], *args])
    if any(keyword(o) is None for o, _ in pairs):
        return Translation(args)  # called as a policy, with the module
    if not {keyword(o) for o, _ in pairs} <= _FACTORY_KEYWORDS:
        return None
    function = cst.Arg(site.updated.func)
    if args:
        function = function.with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
    return Translation([function, *args], (("functools", "partial"),), func=cst.Name("partial"))


def size_policy_certain(site: AstSite) -> bool:
    """The ``ast`` half of :func:`size_policy_arguments`: whether it translates the call."""
    if site.old not in _COMPAT_SIZE_POLICIES:
        return True
    arguments = site.arguments
    if any(on_ast.star(a) for a in arguments):
        return False
    if site.partial or any(on_ast.keyword(a) is None for a in arguments):
        return True
    return {on_ast.keyword(a) for a in arguments} <= _FACTORY_KEYWORDS


class Fsdp101(Renamed):
    """Rename, with compat's factory calls written for torch."""

    rename = CallSiteFix(
        size_policy_arguments,
        bare_references=True,
        partials=True,
        certain=size_policy_certain,
        calls_of=_COMPAT_SIZE_POLICIES,
    )


BEHAVIOUR = Fsdp101
