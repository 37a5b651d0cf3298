"""Binding calls against the signatures of legacy constructors that no longer exist."""

from __future__ import annotations

import inspect
from typing import Any


def legacy_signature(
    spec: dict[str, Any], leading: tuple[str, ...] = (), extra: bool = False
) -> inspect.Signature:
    """A signature of positional-or-keyword parameters with the given defaults, in order.

    Args:
        spec: Parameter names and defaults, in the legacy constructor's order.
        leading: Required parameters before them (``"module"``).
        extra: Accept further keyword arguments (``**kwargs``).
    """
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    parameters = [inspect.Parameter(name, kind) for name in leading]
    parameters += [inspect.Parameter(name, kind, default=default) for name, default in spec.items()]
    if extra:
        parameters.append(inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD))
    return inspect.Signature(parameters)


def given_arguments(
    name: str, signature: inspect.Signature, args: tuple, kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The arguments a call passed explicitly, bound as the legacy callable would bind them.

    Raises:
        TypeError: Worded as Python words it, e.g. ``f() got an unexpected keyword
            argument 'x'``.

    Example:
        >>> sig = legacy_signature({"a": 1, "b": 2}, extra=True)
        >>> given_arguments("f", sig, (0,), {"c": 3})
        {'a': 0, 'c': 3}
    """
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:
        detail = str(exc)
        detail = detail if detail.startswith("got ") else f"got {detail}"
        raise TypeError(f"{name}() {detail}") from None
    given = dict(bound.arguments)
    given.update(given.pop("kwargs", {}))
    return given
