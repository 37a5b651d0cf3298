"""A behaviour's ``ast`` hooks, and whether each answers for the libcst hooks it mirrors.

A rule's behaviour has an ``ast`` half where its class defines, say, ``ast_call``
beside ``call``; where a subclass overrides ``call`` below the class that defines
``ast_call``, the ``ast`` half no longer answers for it and the file goes to libcst
(:class:`~codemods.astlint.detector.Undecided`). That is a question of the class, asked
once a run for each class and hook.
"""

from __future__ import annotations

from codemods.astlint.detector import Undecided
from codemods.rules.api import Behaviour

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any, Callable

__all__ = ["hook"]


def hook(behaviour: Behaviour, name: str) -> Callable[..., Any]:
    """``behaviour``'s ``ast`` hook ``name`` (its class judged once a run).

    Raises:
        Undecided: Where it has none that answers for its libcst hooks (one of them is
            overridden below the class that defines the ``ast`` half).
    """
    cls = type(behaviour)
    key = (cls, name)
    if key not in _REFUSED:
        _REFUSED[key] = _refusal(cls, name)
    refused = _REFUSED[key]
    if refused is not None:
        code = behaviour.rule.code
        raise Undecided(refused.format(code=code), code)
    return getattr(behaviour, name)


#: Each behaviour class and hook name -> why the hook does not answer (None: it does).
_REFUSED: dict[tuple[type, str], str | None] = {}


def _refusal(cls: type, name: str) -> str | None:
    owner = _owner(cls, name)
    if owner is None or getattr(cls, name) is None:
        return f"{{code}} has no {name}"
    for method in cls.AST_MIRRORS[name]:  # type: ignore[attr-defined]
        defined = _owner(cls, method)
        if defined is not None and not issubclass(owner, defined):
            return f"{{code}}: {name} does not answer for {method}"
    return None


def _owner(cls: type, name: str) -> type | None:
    return next((c for c in cls.__mro__ if name in c.__dict__), None)
