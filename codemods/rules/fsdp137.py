"""FSDP137: private attributes of FSDP1's wrapper, read on a model the file wraps.

``model._fsdp_wrapped_module`` names no class, so the rule asks the file: where it
uses FSDP1's class or one of its private modules (the rule's ``found_in``), every
attribute of :data:`FSDP1_PRIVATE_ATTRIBUTES` is reported. The file is read as a whole
before its statements are visited, which the ``ast`` detector does not do: lint gives
the files the pre-filter admits to libcst while the rule is selected (it is opt-in).
"""

from __future__ import annotations

from codemods.registry.names import TORCH_FSDP_CLASSES
from codemods.registry.torch_fsdp1_private_rules import (
    FSDP1_PRIVATE_ATTRIBUTES,
    FSDP1_PRIVATE_MODULES,
)
from codemods.rules.api import Behaviour, Engine
from codemods.syntax.gates import fallback_regions, inside_fallback
from codemods.syntax.lazy_libcst import cst


def _uses_fsdp1(engine: Engine) -> bool:
    for name in engine.nodes(cst.Name):
        for qualified in engine.qualified(name):
            if qualified in TORCH_FSDP_CLASSES or any(
                qualified == module or qualified.startswith(f"{module}.")
                for module in FSDP1_PRIVATE_MODULES
            ):
                return True
    return False


class Fsdp137(Behaviour):
    """Report FSDP1's private attributes in files that use FSDP1; nothing is fixed."""

    modules = True  # the whole file is read once, before its statements
    blocks = True  # no ast half: lint hands the admitted files to libcst

    def module(self, engine: Engine, node: cst.Module) -> None:
        if not engine.settings.enabled(self.rule) or not _uses_fsdp1(engine):
            return
        for attribute in engine.nodes(cst.Attribute):
            if attribute.attr.value in FSDP1_PRIVATE_ATTRIBUTES:
                if not inside_fallback(attribute, engine.parent, fallback_regions):
                    engine.report(attribute, self.rule, fixable_here=False)


BEHAVIOUR = Fsdp137
