"""What the port checker runs: a :class:`PortCase` and the functions it names.

A builder is ``(rank, world_size) -> (model, optimizer)`` (or just the model: the
checker then builds ``torch.optim.SGD(model.parameters(), lr=0.1)``), called in an
initialised process group; the batch function is ``(step, rank) -> batch``; the loss
function ``(model, batch) -> scalar tensor`` (default: :func:`default_loss`). Each is a
callable that pickles by name (a module-level function) or a spec string:
``package.module:function`` or ``path/to/file.py:function``.

Example:
    >>> resolve("math:sqrt")(16.0)
    4.0
    >>> resolve("no colon")
    Traceback (most recent call last):
    ...
    ValueError: 'no colon' is not a 'module:function' or 'file.py:function' spec
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import pickle
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Union

Spec = Union[str, Callable[..., Any]]


@dataclass(frozen=True)
class PortCase:
    """One comparison: two builders, the batches, the loss, and how to run them.

    Attributes:
        before: Builds the reference (FSDP1, or the script before migration).
        after: Builds the port.
        batch: ``(step, rank) -> batch``; tensors in it are moved to the rank's device.
        loss: ``(model, batch) -> loss``; ``None``: :func:`default_loss`.
        steps: Optimizer steps to run.
        accumulate: Micro-batches per step; all but the last run without gradient
            synchronisation (FSDP1 ``no_sync()``, FSDP2 ``set_requires_gradient_sync``).
            Micro-batch ``i`` of step ``s`` is ``batch(s * accumulate + i, rank)``.
        max_norm: Clip gradients to it, each engine's way (``None``: measure only).
        seed: ``torch.manual_seed(seed)`` before each builder, and
            ``seed + 1 + rank`` before the first step (dropout draws the same on both
            sides whatever the builders drew).
        distinct_seeds: Seed rank ``r`` with ``seed + r``: ranks start from different
            values, as when rank 0 alone loads a checkpoint, so a port that does not
            broadcast what FSDP1's ``sync_module_states`` did shows.
        atol: Absolute tolerance of every comparison.
        rtol: Relative tolerance.
    """

    before: Spec
    after: Spec
    batch: Spec
    loss: Spec | None = None
    steps: int = 3
    accumulate: int = 1
    max_norm: float | None = None
    seed: int = 0
    distinct_seeds: bool = False
    atol: float = 1e-5
    rtol: float = 1e-5

    def check(self) -> None:
        """Raise a clear error for what cannot run, before any rank starts.

        Bad counts, specs that name nothing, callables the ranks cannot import.
        """
        if self.steps < 1 or self.accumulate < 1:
            raise ValueError(
                f"steps and accumulate must be >= 1, got {self.steps}, {self.accumulate}"
            )
        for name in ("before", "after", "batch", "loss"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, str):
                resolve(value)  # a spec that names nothing fails here, before any rank starts
                continue
            if not callable(value):
                raise TypeError(
                    f"{name} must be a callable or a 'module:function' spec, got {value!r}"
                )
            try:
                pickle.dumps(value)
            except Exception as error:  # noqa: BLE001 - any pickling failure says the same
                raise TypeError(
                    f"{name}={value!r} cannot be sent to the ranks ({error}): pass a "
                    "module-level function, or a 'module:function' spec"
                ) from None


def resolve(spec: Spec) -> Callable[..., Any]:
    """The callable a spec names (a callable is returned as is).

    Args:
        spec: ``package.module:function`` (dots after the colon reach attributes),
            ``path/to/file.py:function``, or a callable.

    Raises:
        ValueError: A string without ``:``.
        ImportError / AttributeError: What it names does not exist.
    """
    if callable(spec):
        return spec
    if not isinstance(spec, str) or ":" not in spec:
        raise ValueError(f"{spec!r} is not a 'module:function' or 'file.py:function' spec")
    where, _, attribute = spec.rpartition(":")
    module = _load_file(Path(where)) if where.endswith(".py") else importlib.import_module(where)
    value: Any = module
    for part in attribute.split("."):
        value = getattr(value, part)
    if not callable(value):
        raise TypeError(f"{spec!r} names {value!r}, which is not callable")
    return value


def _load_file(path: Path) -> Any:
    path = path.resolve()
    if not path.is_file():
        raise ImportError(f"no such file: {path}")
    name = f"portcheck_{path.stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:8]}"
    if name in sys.modules:
        return sys.modules[name]
    if str(path.parent) not in sys.path:  # as for a script: its neighbours import
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def default_loss(model: Any, batch: Any) -> Any:
    """The loss when none is given.

    - a mapping: ``model(**batch)``, then its ``.loss`` if it has one (Hugging Face
      style), else the mean square of the output;
    - ``(inputs, target)``: ``model(inputs)`` against ``target``, cross-entropy for an
      integer target, mean squared error otherwise;
    - anything else: ``model(batch)``, the mean square of the output.
    """
    import torch.nn.functional as F

    if isinstance(batch, Mapping):
        output = model(**batch)
        loss = getattr(output, "loss", None)
        return loss if loss is not None else output.float().square().mean()
    if isinstance(batch, (tuple, list)) and len(batch) == 2:
        inputs, target = batch
        output = model(inputs)
        if not target.is_floating_point():
            return F.cross_entropy(output.float().flatten(0, -2), target.flatten())
        return F.mse_loss(output.float(), target.float())
    return model(batch).float().square().mean()


__all__ = ["PortCase", "Spec", "default_loss", "resolve"]
