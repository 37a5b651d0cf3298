r"""Lightning's strategy registry: ``StrategyRegistry.register(name, FSDPStrategy, **init)``.

The registry builds the strategy, when a Trainer is given the name, with the keywords
that follow ``register``'s own parameters (``name``, ``strategy``, ``description``,
``override``): a strategy argument that changed reads the same there as in a call of the
class (FSDP208). The decorator form, which passes no ``strategy``, is not followed.

Example:
    >>> from codemods.astlint.lint import lint
    >>> from codemods.settings import Settings
    >>> source = (
    ...     b"from lightning.pytorch.strategies import FSDPStrategy, StrategyRegistry\n"
    ...     b"StrategyRegistry.register('mine', FSDPStrategy, activation_checkpointing=[B])\n"
    ... )
    >>> [finding.code for finding in lint(source, Settings())]
    ['FSDP208']
"""

from __future__ import annotations

import ast

from codemods.syntax.cst_nodes import is_plain_positional, keyword
from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from collections.abc import Iterable

    from codemods.rules.api import Detector, Engine

#: The registries' ``register``: Lightning's and Fabric's, under both packages' names.
REGISTERS = (
    "lightning.pytorch.strategies.StrategyRegistry.register",
    "pytorch_lightning.strategies.StrategyRegistry.register",
    "lightning.fabric.strategies.STRATEGY_REGISTRY.register",
    "lightning_fabric.strategies.STRATEGY_REGISTRY.register",
)
_STRATEGY, _STRATEGY_AT = "strategy", 1


def registers_another_cst(engine: Engine, call: cst.Call, classes: Iterable[str]) -> bool:
    """Whether ``call`` is a ``register`` that does not certainly register one of ``classes``.

    False for any other call (its callee is the rule's own). The strategy is the
    ``strategy`` keyword or the second positional argument, where no ``*args`` comes first.
    """
    if not engine.qualified(call.func) & set(REGISTERS):
        return False
    given = [a.value for a in call.args if keyword(a) == _STRATEGY]
    if not any(a.star == "*" for a in call.args):  # a starred argument hides the positions
        given += [a.value for a in call.args if is_plain_positional(a)][_STRATEGY_AT:][:1]
    return not (given and engine.qualified(given[0]) & set(classes))


def registers_another_ast(detector: Detector, call: ast.Call, classes: Iterable[str]) -> bool:
    """:func:`registers_another_cst` on the ``ast`` tree."""
    if not detector.qualified(call.func) & set(REGISTERS):
        return False
    given = [k.value for k in call.keywords if k.arg == _STRATEGY]
    if not any(type(a) is ast.Starred for a in call.args):
        given += call.args[_STRATEGY_AT:][:1]
    return not (given and detector.qualified(given[0]) & set(classes))


__all__ = ["REGISTERS", "registers_another_ast", "registers_another_cst"]
