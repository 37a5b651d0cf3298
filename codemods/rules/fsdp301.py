"""FSDP301: FairScale's ``FullyShardedDataParallel`` as torch's (unsafe).

FairScale's pieces only work together: its ``wrap`` reads its own ``enable_wrap``
context, and its ``auto_wrap`` silently does nothing inside torch's. So the fixes for
``enable_wrap`` and ``wrap`` apply to a file together or not at all, never where the
file also calls ``auto_wrap`` (which has no torch counterpart), and a FairScale FSDP
class passed as ``enable_wrap(wrapper_cls=...)`` moves only with its ``enable_wrap``.
"""

from __future__ import annotations

from codemods.registry.names import FAIRSCALE_OFFLOAD, FAIRSCALE_PRECISION_DETAILS, TORCH_FSDP
from codemods.rules.api import CallSiteFix, Import, Site, Translation
from codemods.rules.call_blockers import (
    Argument,
    fairscale_fsdp_blockers,
    fairscale_fsdp_keyword_blockers,
    from_ast,
)
from codemods.rules.kinds.reference import Reported
from codemods.syntax import ast_nodes as on_ast
from codemods.syntax.cst_nodes import (
    dotted,
    is_plain_positional,
    keep_ending,
    keyword,
    keyword_arg,
    literal,
)
from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any

    from codemods.rules.api import AstSite

_FSDP = TORCH_FSDP
_PRECISION_DETAILS = FAIRSCALE_PRECISION_DETAILS
_OFFLOAD = FAIRSCALE_OFFLOAD


def _flag(arg: cst.Arg) -> bool | None:
    value = literal(arg.value)
    return value if isinstance(value, bool) else None


def fsdp_keywords(
    pairs: list[tuple[cst.Arg, cst.Arg]],
) -> tuple[list[cst.Arg], list[Import]] | None:
    """FairScale ``FullyShardedDataParallel`` keyword arguments as torch FSDP ones.

    Translated where the meaning is certain: ``reshard_after_forward`` to a
    ``sharding_strategy``, ``mixed_precision=True`` (with ``compute_dtype``,
    ``buffer_dtype``, ``fp32_reduce_scatter``) to a ``MixedPrecision``,
    ``move_params_to_cpu``/``cpu_offload`` to a ``CPUOffload``, ``compute_device`` to
    ``device_id``, ``flatten_parameters=True``
    and a ``move_grads_to_cpu`` that agrees with the offload dropped (torch does both).

    Returns:
        The new arguments and the imports they need, or None if any argument is
        positional, not a literal where one is needed, or has no torch meaning.
    """
    given = {keyword(o): (o, u) for o, u in pairs}
    if None in given or len(given) != len(pairs):
        return None
    flags = {name: _flag(given[name][0]) for name in given}
    precision = flags.get("mixed_precision", False)
    offload = any(flags.get(name) for name in _OFFLOAD)
    grads = given.get("move_grads_to_cpu")
    if grads is not None and (
        dotted(grads[0].value) not in ("True", "False", "None")
        or literal(grads[0].value) not in (None, offload)
    ):
        return None  # torch offloads gradients exactly when it offloads parameters
    out: list[cst.Arg] = []
    imports: list[Import] = []
    offload_placed = False
    for name, (_, updated) in given.items():
        if name == "process_group":
            out.append(updated)
        elif name == "compute_device":
            out.append(keyword_arg(updated, "device_id", updated.value))
        elif name == "reshard_after_forward" and flags[name] is not None:
            strategy = "FULL_SHARD" if flags[name] else "SHARD_GRAD_OP"
            value = cst.parse_expression(f"ShardingStrategy.{strategy}")
            out.append(keyword_arg(updated, "sharding_strategy", value))
            imports.append((_FSDP, "ShardingStrategy"))
        elif name == "flatten_parameters" and flags[name] is True:
            continue  # torch's FSDP1 always flattens
        elif name == "mixed_precision" and precision is not None:
            if precision:
                value, needs_torch = _mixed_precision(given)
                if value is None:
                    return None
                out.append(keyword_arg(updated, "mixed_precision", value))
                imports.append((_FSDP, "MixedPrecision"))
                imports += [("torch", None)] if needs_torch else []
        elif name in _PRECISION_DETAILS and precision:
            continue  # folded into the MixedPrecision above
        elif name in _OFFLOAD and flags[name] is not None:
            if offload and not offload_placed:
                value = cst.parse_expression("CPUOffload(offload_params=True)")
                out.append(keyword_arg(updated, "cpu_offload", value))
                imports.append((_FSDP, "CPUOffload"))
                offload_placed = True
        elif name == "move_grads_to_cpu":
            continue  # agrees with the offload (checked above)
        else:
            return None
    return out, imports


def _mixed_precision(given: dict) -> tuple[cst.BaseExpression | None, bool]:
    """FairScale's half-precision settings as a torch ``MixedPrecision(...)`` expression."""
    dtypes: dict[str, str | None] = {}
    for name in ("compute_dtype", "buffer_dtype"):
        if name in given:
            dtypes[name] = dotted(given[name][1].value)
            if dtypes[name] is None:
                return None, False  # only plain names are repeated safely
    compute = dtypes.get("compute_dtype") or "torch.float16"
    reduce_fp32 = given.get("fp32_reduce_scatter")
    if reduce_fp32 is not None and _flag(reduce_fp32[0]) is None:
        return None, False
    reduce = "torch.float32" if reduce_fp32 is not None and _flag(reduce_fp32[0]) else compute
    buffer = dtypes.get("buffer_dtype") or compute
    text = f"MixedPrecision(param_dtype={compute}, reduce_dtype={reduce}, buffer_dtype={buffer})"
    return cst.parse_expression(text), "torch.float" in text


def fsdp_arguments(site: Site) -> Translation | None:
    """``FullyShardedDataParallel(module, **fairscale_kwargs)`` for torch's FSDP."""
    pairs = site.pairs
    if site.partial or not pairs or not is_plain_positional(pairs[0][0]):
        return None
    translated = fsdp_keywords(pairs[1:])
    if translated is None:
        return None
    args, imports = translated
    return Translation(keep_ending([pairs[0][1], *args], list(site.updated.args)), tuple(imports))


def fsdp_keywords_certain(site: AstSite, arguments: list) -> bool:
    """The ``ast`` half of :func:`fsdp_keywords`: whether it translates ``arguments``."""
    return not fairscale_fsdp_keyword_blockers([from_ast(arg) for arg in arguments])


#: Why a call rule's fix leaves ``partial(Old, ...)``: the calls of the partial add theirs.
PARTIAL_BLOCKER = "a `functools.partial` of it, whose calls add arguments the fix does not see"


def from_cst(arg: cst.Arg, classes: bool = False) -> Argument:
    """The :class:`~codemods.rules.call_blockers.Argument` a libcst call argument is."""
    name = arg.keyword.value if arg.keyword is not None else None
    return Argument(name, arg.star if isinstance(arg.star, str) else "", dotted(arg.value), classes)


def site_arguments(site: Site | AstSite, classes: str | None = None) -> list[Argument]:
    """The arguments of either detector's call, as the blockers read them.

    ``classes``: the keyword whose value is asked whether it names module classes.
    """

    def names_classes(keyword: str | None, arg: Any) -> bool:
        if classes is None or keyword != classes:
            return False
        return site.resolver.class_set(arg.value) is not None

    if isinstance(site, Site):
        return [
            from_cst(arg, names_classes(arg.keyword.value if arg.keyword else None, arg))
            for arg in site.original.args
        ]
    return [from_ast(arg, names_classes(on_ast.keyword(arg), arg)) for arg in site.arguments]


def fsdp_blockers(site: Site | AstSite) -> list[str]:
    """Why :func:`fsdp_arguments` leaves a call, from either detector's site."""
    return [PARTIAL_BLOCKER] if site.partial else fairscale_fsdp_blockers(site_arguments(site))


class Fsdp301(Reported):
    """Rename to torch's FSDP where every call's arguments translate."""

    rename = CallSiteFix(
        fsdp_arguments,
        passed_as=(("FSDP302", "wrapper_cls"),),
        requires=("FSDP302",),
        blockers=fsdp_blockers,
    )


BEHAVIOUR = Fsdp301
