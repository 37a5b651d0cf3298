"""FSDP210: compat's ``DDPFullyShardedNativeStrategy`` is Lightning's ``FSDPStrategy``."""

from __future__ import annotations

from codemods.rules.api import CallSiteFix, Import, Site, Translation
from codemods.rules.kinds.reference import Reported
from codemods.rules.lightning_strategy import certain, translate
from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any

    pass


def native_strategy_arguments(site: Site) -> Translation | None:
    """The arguments of compat's ``DDPFullyShardedNativeStrategy`` as ``FSDPStrategy`` ones.

    compat accepted module classes in any collection as ``auto_wrap_policy``; Lightning
    takes a set, so a list or tuple display becomes one. (A name is kept: it may as well
    hold a policy callable, which Lightning takes too.)
    """

    def specific(name: str, original: cst.Arg, updated: cst.Arg, imports: list[Import]) -> Any:
        value = updated.value
        if (
            name == "auto_wrap_policy"
            and isinstance(value, (cst.List, cst.Tuple))
            and value.elements
        ):
            return updated.with_changes(value=cst.Set(elements=value.elements))
        return updated

    return translate(site, specific)


class Fsdp210(Reported):
    """Rename to ``FSDPStrategy``, a list of classes as ``auto_wrap_policy`` made a set."""

    # Its own arguments always translate: what both strategies share decides.
    rename = CallSiteFix(
        native_strategy_arguments, certain=lambda site: certain(site, lambda name, arg: None)
    )


BEHAVIOUR = Fsdp210
