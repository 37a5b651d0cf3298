"""Why FSDP301's and FSDP202's fixes leave a call for a human, from what its arguments show.

The fixes translate FairScale's ``FullyShardedDataParallel(...)`` (FSDP301) and
Lightning's FairScale ``DDPFullyShardedStrategy(...)`` (FSDP202) call by call, where
every argument has a certain translation. The ``ast`` halves of those fixes
(:func:`codemods.rules.fsdp301.fsdp_keywords_certain`,
:func:`codemods.rules.fsdp202.ddp_fully_sharded_reasons`) decide with the functions
here, and ``compat``'s run-time warnings for the same calls use them to say what
``migrate`` will do with *this* call. Each returns the reasons, empty where the fix
translates the call. Nothing here imports libcst or torch.

Example:
    >>> model = Argument(spelled="model")
    >>> fairscale_fsdp_blockers([model, Argument("bucket_cap_mb"), Argument(star="**")])
    ['`**kwargs` hides which arguments it passes', '`bucket_cap_mb` has no torch FSDP meaning']
    >>> fairscale_fsdp_blockers([model, Argument("reshard_after_forward", spelled="False")])
    []
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from codemods.records import Frozen
from codemods.registry.names import (
    FAIRSCALE_OFFLOAD,
    FAIRSCALE_ONLY_STRATEGY_ARGUMENTS,
    FAIRSCALE_PRECISION_DETAILS,
)
from codemods.syntax import ast_nodes as on_ast

#: FairScale FSDP keywords torch's FSDP takes, whatever their value.
_KEPT = ("process_group", "compute_device", "move_grads_to_cpu")


class Argument(Frozen):
    """What decides a fix about one argument of a call.

    Attributes:
        keyword: Its keyword; None for a positional argument, ``*args`` and ``**kwargs``.
        star: ``"*"`` or ``"**"`` for ``*args`` / ``**kwargs``, else empty.
        spelled: Its value as written where that is ``True``, ``False``, ``None`` or a
            dotted name (``torch.float16``); None for anything else.
        classes: Its value names module classes the fix can spell as a set (a class, or
            a list, tuple or set of them).
    """

    __slots__ = _fields = ("keyword", "star", "spelled", "classes")

    keyword: str | None
    star: str
    spelled: str | None
    classes: bool

    def __init__(
        self,
        keyword: str | None = None,
        star: str = "",
        spelled: str | None = None,
        classes: bool = False,
    ) -> None:
        self._set(keyword=keyword, star=star, spelled=spelled, classes=classes)

    @property
    def flag(self) -> bool | None:
        """The literal ``True`` or ``False`` it passes, else None."""
        return {"True": True, "False": False}.get(self.spelled or "")


def from_ast(arg: ast.expr | ast.keyword, classes: bool = False) -> Argument:
    """The :class:`Argument` an ``ast`` call argument is."""
    star = "**" if type(arg) is ast.keyword and arg.arg is None else ""
    star = "*" if type(arg) is ast.Starred else star
    return Argument(on_ast.keyword(arg), star, on_ast.spelled(on_ast.value(arg)), classes)


def _shape(arguments: Sequence[Argument]) -> list[str]:
    """Reasons in the call's shape: ``*args``, ``**kwargs``, positional arguments."""
    reasons = []
    for arg in arguments:
        if arg.star:
            reasons.append(f"`{arg.star}{'kwargs' if arg.star == '**' else 'args'}` hides "
                           "which arguments it passes")  # fmt: skip
        elif arg.keyword is None:
            reasons.append("it passes arguments by position")
    return list(dict.fromkeys(reasons))


def fairscale_fsdp_blockers(arguments: Sequence[Argument]) -> list[str]:
    """Why FSDP301's fix cannot translate a FairScale FSDP call with ``arguments``.

    The module comes first, by position; the others as :func:`fairscale_fsdp_keyword_blockers`.
    """
    first = arguments[0] if arguments else None
    if first is None or first.keyword is not None or first.star:
        return ["the module is not its first positional argument"]
    return fairscale_fsdp_keyword_blockers(arguments[1:])


def fairscale_fsdp_keyword_blockers(arguments: Sequence[Argument]) -> list[str]:
    """Why FSDP301's fix cannot translate FairScale FSDP ``arguments`` other than the module.

    Translated are ``process_group``, ``compute_device``, a literal
    ``reshard_after_forward``, ``flatten_parameters=True``, a literal ``mixed_precision``
    (with plain-name dtypes and a literal ``fp32_reduce_scatter``), literal
    ``move_params_to_cpu`` / ``cpu_offload`` and a ``move_grads_to_cpu`` that agrees.
    """
    reasons = _shape(arguments)
    given = {arg.keyword: arg for arg in arguments if arg.keyword is not None and not arg.star}
    precision = given["mixed_precision"].flag if "mixed_precision" in given else False
    offload = any(given[name].flag for name in FAIRSCALE_OFFLOAD if name in given)
    grads = given.get("move_grads_to_cpu")
    if grads is not None and grads.spelled not in ("True", "False", "None"):
        reasons.append("`move_grads_to_cpu` is not a literal")
    elif grads is not None and {"True": True, "False": False}.get(grads.spelled) not in (
        None,
        offload,
    ):
        reasons.append(
            f"`move_grads_to_cpu={grads.spelled}` disagrees with the parameters' offload "
            "(torch offloads gradients exactly when it offloads parameters)"
        )
    for name, arg in given.items():
        if name in _KEPT or name == "reshard_after_forward" and arg.flag is not None:
            continue
        if name == "flatten_parameters" and arg.flag is True:
            continue  # torch's FSDP1 always flattens
        if name == "mixed_precision" and precision is not None:
            reasons += _precision_blockers(given) if precision else []
        elif name in FAIRSCALE_PRECISION_DETAILS and precision:
            continue  # folded into the MixedPrecision
        elif name in FAIRSCALE_OFFLOAD and arg.flag is not None:
            continue
        elif name in ("reshard_after_forward", "mixed_precision", *FAIRSCALE_OFFLOAD):
            reasons.append(f"`{name}` is not a literal True or False")
        elif name in FAIRSCALE_PRECISION_DETAILS:
            reasons.append(f"`{name}` without `mixed_precision=True` has no torch FSDP meaning")
        elif name == "flatten_parameters":
            reasons.append("`flatten_parameters` other than True has no torch FSDP meaning")
        else:
            reasons.append(f"`{name}` has no torch FSDP meaning")
    return reasons


def _precision_blockers(given: dict[str, Argument]) -> list[str]:
    reasons = [
        f"`{name}` is not a plain name"
        for name in ("compute_dtype", "buffer_dtype")
        if name in given and given[name].spelled is None
    ]
    reduce = given.get("fp32_reduce_scatter")
    if reduce is not None and reduce.flag is None:
        reasons.append("`fp32_reduce_scatter` is not a literal True or False")
    return reasons


def ddp_fully_sharded_blockers(arguments: Sequence[Argument], fabric: bool = False) -> list[str]:
    """Why FSDP202's fix cannot translate ``DDPFullyShardedStrategy`` ``arguments``.

    Args:
        arguments: The call's arguments.
        fabric: The class is Fabric's (which takes no ``checkpoint_io``).
    """
    reasons = _shape(arguments)
    for arg in arguments:
        name = arg.keyword
        if name is None or arg.star:
            continue
        if name == "flatten_parameters":
            if arg.spelled != "True":
                reasons.append("`flatten_parameters` other than True has no FSDPStrategy meaning")
        elif name in FAIRSCALE_ONLY_STRATEGY_ARGUMENTS:
            reasons.append(f"`{name}` has no FSDPStrategy meaning")
        elif name == "reshard_after_forward" and arg.spelled not in ("True", "False"):
            reasons.append("`reshard_after_forward` is not a literal True or False")
        elif name == "activation_checkpointing" and not arg.classes:
            reasons.append("`activation_checkpointing` is not a class or a list of classes")
        elif fabric and name == "checkpoint_io":
            reasons.append("Fabric's FSDPStrategy takes no `checkpoint_io`")
    return reasons


__all__ = [
    "Argument",
    "ddp_fully_sharded_blockers",
    "fairscale_fsdp_blockers",
    "fairscale_fsdp_keyword_blockers",
    "from_ast",
]
