"""The legacy strategy classes, built on one Lightning flavour's ``FSDPStrategy``.

Lightning ships the Trainer side twice (``lightning.pytorch`` and the standalone
``pytorch_lightning``) and Fabric once more, each with its own ``FSDPStrategy`` class, so
the legacy classes are built per flavour by :func:`build`.

On CPU the classes also make FSDP run: Lightning refuses an exact ``FSDPStrategy`` on
CPU (a subclass passes its check), and passes ``device_id=root_device.index`` (None on
CPU), which torch's FSDP1 cannot use without an accelerator. Here the model is wrapped
with ``device_id=cpu`` first, and Lightning then finishes its own setup (torchmetrics,
activation checkpointing) on the wrapped model.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from compat.deprecation import warn_deprecated
from compat.signatures import given_arguments, legacy_signature
from compat.strategies import translate

_CPU = torch.device("cpu")
# Both accept FSDPStrategy's newer arguments as well, passed on like Lightning's own.
_DDP_FULLY_SHARDED = legacy_signature(translate.DDP_FULLY_SHARDED_ARGUMENTS, extra=True)
_DDP_FULLY_SHARDED_NATIVE = legacy_signature(
    translate.DDP_FULLY_SHARDED_NATIVE_ARGUMENTS, extra=True
)


def _wrap_kwargs(strategy: Any, fsdp_kwargs: dict[str, Any]) -> dict[str, Any]:
    return {
        "cpu_offload": strategy.cpu_offload,
        "mixed_precision": strategy.mixed_precision_config,
        "sharding_strategy": strategy.sharding_strategy,
        "device_id": _CPU,
        **fsdp_kwargs,
    }


def _prewrap_on_cpu(strategy: Any, module: torch.nn.Module, fsdp_kwargs: dict[str, Any]) -> Any:
    from torch.distributed.fsdp import FullyShardedDataParallel

    if strategy.root_device.type != "cpu" or any(
        isinstance(m, FullyShardedDataParallel) for m in module.modules()
    ):
        return module
    return FullyShardedDataParallel(module=module, **_wrap_kwargs(strategy, fsdp_kwargs))


@contextlib.contextmanager
def _policy_set_aside(fsdp_kwargs: dict[str, Any]) -> Iterator[None]:
    # Lightning drops (and warns about) the policy when it meets a wrapped model; the
    # policy was used already, so keep it out of sight and put it back afterwards.
    policy = fsdp_kwargs.pop("auto_wrap_policy", None)
    try:
        yield
    finally:
        if policy is not None:
            fsdp_kwargs["auto_wrap_policy"] = policy


def _sharded_context(strategy: Any, fsdp_kwargs: dict[str, Any]):
    from torch.distributed.fsdp import FullyShardedDataParallel
    from torch.distributed.fsdp.wrap import enable_wrap

    return enable_wrap(wrapper_cls=FullyShardedDataParallel, **_wrap_kwargs(strategy, fsdp_kwargs))


def build(fsdp_strategy: type, side: str, registry: Any) -> tuple[type, type, type]:
    """Create the legacy classes for one Lightning flavour and register the removed names.

    Args:
        fsdp_strategy: That flavour's ``FSDPStrategy`` class.
        side: ``"trainer"`` or ``"fabric"``.
        registry: That flavour's strategy registry, where ``"fsdp_native"``,
            ``"fsdp_native_full_shard_offload"`` and ``"ddp_fully_sharded"`` are registered.

    Returns:
        ``DDPFullyShardedStrategy``, ``DDPFullyShardedNativeStrategy`` and
        ``DDPFullyShardedPlugin``.
    """
    if side == "trainer":

        class CPUCapableFSDPStrategy(fsdp_strategy):
            """``FSDPStrategy`` that also runs on CPU with gloo."""

            def _setup_model(self, model: torch.nn.Module) -> torch.nn.Module:
                model = _prewrap_on_cpu(self, model, self.kwargs)
                with _policy_set_aside(self.kwargs):
                    return super()._setup_model(model)

            @contextlib.contextmanager
            def model_sharded_context(self) -> Iterator[None]:
                if self.root_device.type != "cpu":
                    with super().model_sharded_context():
                        yield
                    return
                with _sharded_context(self, self.kwargs):
                    yield

        adapt = dict
    else:

        class CPUCapableFSDPStrategy(fsdp_strategy):  # type: ignore[no-redef]
            """Fabric's ``FSDPStrategy`` that also runs on CPU with gloo."""

            def setup_module(self, module: torch.nn.Module) -> torch.nn.Module:
                module = _prewrap_on_cpu(self, module, self._fsdp_kwargs)
                with _policy_set_aside(self._fsdp_kwargs):
                    return super().setup_module(module)

            def module_sharded_context(self):
                if self.root_device.type != "cpu":
                    return super().module_sharded_context()
                return _sharded_context(self, self._fsdp_kwargs)

        adapt = translate.for_fabric

    class LegacyStrategy(CPUCapableFSDPStrategy):
        """Binds the legacy signature, warns with the rule, translates, builds FSDPStrategy."""

        _rule: str
        _signature: Any
        _translate: Any

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            warn_deprecated(self._rule)
            name = f"{type(self).__name__}.__init__"
            given = given_arguments(name, self._signature, args, kwargs)
            super().__init__(**adapt(type(self)._translate(given)))

    class DDPFullyShardedStrategy(LegacyStrategy):
        """Lightning 1.x's FairScale ``DDPFullyShardedStrategy``, as torch FSDP (FSDP202)."""

        _rule = "FSDP202"
        _signature = _DDP_FULLY_SHARDED
        _translate = staticmethod(translate.translate_ddp_fully_sharded)

    class DDPFullyShardedPlugin(DDPFullyShardedStrategy):
        """Lightning 1.5's name of the FairScale strategy (FSDP201); pass it as ``strategy=``."""

        _rule = "FSDP201"

    class DDPFullyShardedNativeStrategy(LegacyStrategy):
        """Lightning 1.7-1.9's ``DDPFullyShardedNativeStrategy``, now ``FSDPStrategy`` (FSDP203)."""

        _rule = "FSDP203"
        _signature = _DDP_FULLY_SHARDED_NATIVE
        _translate = staticmethod(translate.translate_common)

    # The strategy names Lightning 2.0 removed, registered again (warning by name).
    class NativeStrategyByName(DDPFullyShardedNativeStrategy):
        _rule = "FSDP204"

    class FairScaleStrategyByName(DDPFullyShardedStrategy):
        _rule = "FSDP205"

    names = {
        "fsdp_native": (NativeStrategyByName, {}),
        "fsdp_native_full_shard_offload": (NativeStrategyByName, {"cpu_offload": True}),
        "ddp_fully_sharded": (FairScaleStrategyByName, {}),
    }
    for name, (cls, init_params) in names.items():
        if name not in registry:
            registry.register(
                name,
                cls,
                description=f"fsdp-compat: removed name of {cls.__base__.__name__}",
                **init_params,
            )

    classes = (DDPFullyShardedStrategy, DDPFullyShardedNativeStrategy, DDPFullyShardedPlugin)
    for cls in (
        CPUCapableFSDPStrategy,
        LegacyStrategy,
        NativeStrategyByName,
        FairScaleStrategyByName,
        *classes,
    ):
        cls.__module__ = f"compat.strategies.{side}"
    return classes
