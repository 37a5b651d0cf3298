"""FSDP112: compat's ``FullyShardedDataParallel`` is torch's; import it from torch."""

from __future__ import annotations

import ast

from codemods.registry.names import TORCH_WRAP
from codemods.rules.api import CallSiteFix, Site, Translation
from codemods.rules.kinds.reference import Reported
from codemods.syntax import ast_nodes as on_ast
from codemods.syntax.cst_nodes import is_bool, keyword, keyword_arg
from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from codemods.rules.api import AstSite


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
            imports.append((TORCH_WRAP, "ModuleWrapPolicy"))
            continue
        out.append(updated)
    return Translation(out, tuple(imports))


def compat_fsdp_certain(site: AstSite) -> bool:
    """The ``ast`` half of :func:`compat_fsdp_arguments`."""
    if site.partial:
        return False
    for arg in site.arguments:
        name = on_ast.keyword(arg)
        if on_ast.star(arg) or name == "activation_checkpointing":
            return False
        value = on_ast.value(arg)
        if name == "cpu_offload" and on_ast.is_bool(value) and not site.resolver.applies("FSDP109"):
            return False
        if name == "auto_wrap_policy" and isinstance(value, (ast.Set, ast.List, ast.Tuple)):
            if not value.elts:
                return False
    return True


class Fsdp112(Reported):
    """Rename compat's class to torch's, its calls written the way torch takes them."""

    rename = CallSiteFix(compat_fsdp_arguments, bare_references=True, certain=compat_fsdp_certain)


BEHAVIOUR = Fsdp112
