"""Call-site fixes that move code off the ``compat`` shim to native torch (FSDP101, 112, 113).

``compat`` accepts more than torch does: its FSDP takes module classes as a policy and
``cpu_offload=True``; its size-based policy, called without a module, returns the
policy with its threshold bound, spelled ``min_nonwrapped_numel``. Moving to torch's
names means writing those calls the way torch takes them.
"""

from __future__ import annotations

import libcst as cst

from codemods.fixes.base import CallSiteFix, Site, Translation
from codemods.registry.names import TORCH_WRAP
from codemods.syntax import is_bool, keyword, keyword_arg

_WRAP = TORCH_WRAP
#: compat's size-based policies: called without a module they return a bound policy.
_COMPAT_SIZE_POLICIES = (
    "compat.fsdp.wrap.size_based_auto_wrap_policy",
    "compat.fsdp.wrap.default_auto_wrap_policy",
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


def compat_fsdp_arguments(site: Site) -> Translation | None:
    """The call of compat's ``FullyShardedDataParallel(...)``, for torch's.

    A list, tuple or set display of classes as ``auto_wrap_policy`` becomes a
    ``ModuleWrapPolicy``;
    ``cpu_offload=True`` is FSDP109's to rewrite (this fix needs it applied);
    ``activation_checkpointing`` (FSDP110) has no torch argument and stays for a human.
    """
    if site.partial:
        return None
    out: list[cst.Arg] = []
    imports = []
    for original, updated in site.pairs:
        name = keyword(original)
        if original.star or name == "activation_checkpointing":
            return None
        if (
            name == "cpu_offload"
            and is_bool(original.value)
            and not site.resolver.applies("FSDP109")
        ):
            return None
        value = updated.value
        if name == "auto_wrap_policy" and isinstance(value, (cst.Set, cst.List, cst.Tuple)):
            if not value.elements:
                return None
            classes = cst.Set(elements=value.elements)
            policy = cst.Call(cst.Name("ModuleWrapPolicy"), args=[cst.Arg(classes)])
            out.append(keyword_arg(updated, name, policy))
            imports.append((_WRAP, "ModuleWrapPolicy"))
            continue
        out.append(updated)
    return Translation(out, tuple(imports))


FIXES = {
    "FSDP101": CallSiteFix(size_policy_arguments, bare_references=True, partials=True),
    "FSDP112": CallSiteFix(compat_fsdp_arguments, bare_references=True),
    "FSDP113": CallSiteFix(
        size_policy_arguments, bare_references=True, partials=True, supersedes=("FSDP106",)
    ),
}
