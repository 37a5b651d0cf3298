"""What the legacy strategy classes do, written once for every Lightning flavour.

Lightning ships the Trainer side twice (``lightning.pytorch`` and the standalone
``pytorch_lightning``) and Fabric twice more (``lightning.fabric``, ``lightning_fabric``),
each with its own ``FSDPStrategy``. Each flavour module of ``compat.strategies`` gets its
classes from :func:`legacy_classes`, which composes that flavour's ``FSDPStrategy`` with
these mixins and homes each class in the flavour module under its own name, so that it
imports and pickles from there; none of this imports Lightning.

On CPU the classes also make FSDP run: Lightning refuses an exact ``FSDPStrategy`` on
CPU (a subclass passes its check), and passes ``device_id=root_device.index`` (None on
CPU), which torch's FSDP1 cannot use without an accelerator. Here the model is wrapped
with ``device_id=cpu`` first, and Lightning then finishes its own setup (torchmetrics,
activation checkpointing) on the wrapped model.

Lightning takes its full state dicts (the Trainer's default checkpoint, Fabric's
``save``) with ``FullStateDictConfig(offload_to_cpu=True)``, which makes FSDP1 free the
gathered parameters it then reads on CPU ranks (a segmentation fault on torch 2.13).
Where the ranks compute on the CPU the tensors are there already, so these classes take
them in place: the same dict, without the offload.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterator
from typing import Any, Callable, NamedTuple

import torch

from compat.call_source import described
from compat.deprecation import warn_deprecated
from compat.fsdp.fallbacks import runs_on_cpu
from compat.signatures import given_arguments, legacy_signature
from compat.strategies import translate

_CPU = torch.device("cpu")


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


def full_state_dict_in_place(
    module: torch.nn.Module, world_size: int = 1, rank0_only: bool = True
) -> contextlib.AbstractContextManager[Any]:
    """The full-state-dict context Lightning asks for, but with no offload to the CPU.

    For FSDP1 units that compute on the CPU: a full state dict offloaded "to the CPU"
    there stays in the storage FSDP1 frees, and reading it crashes the process. The
    optimizer's state is still gathered as Lightning asks (that offload copies).

    Args:
        module: The FSDP1-wrapped model.
        world_size: Lightning's argument, unused: no offload at any size.
        rank0_only: Whether only rank 0 gets the dict (the others an empty one).
    """
    del world_size
    from torch.distributed.fsdp import FullStateDictConfig, StateDictType
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    optimizer_config: dict[str, Any] = {}
    try:  # torch >= 2.0; Lightning's own context sets it where torch has it
        from torch.distributed.fsdp.api import FullOptimStateDictConfig
    except ImportError:
        pass
    else:
        optimizer_config["optim_state_dict_config"] = FullOptimStateDictConfig(
            offload_to_cpu=True, rank0_only=rank0_only
        )
    return FSDP.state_dict_type(
        module,
        StateDictType.FULL_STATE_DICT,
        FullStateDictConfig(offload_to_cpu=False, rank0_only=rank0_only),
        **optimizer_config,
    )


#: The name of Lightning's helper that builds its full-state-dict context (Lightning 2.1+).
_LIGHTNING_FULL_CONTEXT = "_get_full_state_dict_context"


@contextlib.contextmanager
def _full_state_dicts_in_place(method: Callable[..., Any]) -> Iterator[None]:
    # Fabric's save_checkpoint builds the context inline from its module's helper: for
    # this one call, that name answers with the in-place context instead.
    namespace = getattr(method, "__globals__", {})
    original = namespace.get(_LIGHTNING_FULL_CONTEXT)
    if original is None:
        yield
        return
    namespace[_LIGHTNING_FULL_CONTEXT] = full_state_dict_in_place
    try:
        yield
    finally:
        namespace[_LIGHTNING_FULL_CONTEXT] = original


def _full_on_cpu(strategy: Any, module: Any) -> bool:
    return (
        getattr(strategy, "_state_dict_type", "full") == "full"
        and isinstance(module, torch.nn.Module)
        and runs_on_cpu(module)
    )


class TrainerOnCPU:
    """For a Trainer-side ``FSDPStrategy`` subclass: also runs on CPU with gloo."""

    #: Turns translated Trainer-side arguments into this side's (here: unchanged).
    adapt_arguments: Callable[[dict[str, Any]], dict[str, Any]] = staticmethod(dict)

    def _setup_model(self, model: torch.nn.Module) -> torch.nn.Module:
        wrapped = _prewrap_on_cpu(self, model, self.kwargs)
        if wrapped is model:  # on a GPU: Lightning wraps, with the policy
            return super()._setup_model(model)
        with _policy_set_aside(self.kwargs):
            return super()._setup_model(wrapped)

    @contextlib.contextmanager
    def model_sharded_context(self) -> Iterator[None]:
        """Lightning's context, or on CPU torch's ``enable_wrap`` with ``device_id=cpu``."""
        if self.root_device.type != "cpu":
            with super().model_sharded_context():
                yield
            return
        with _sharded_context(self, self.kwargs):
            yield

    def lightning_module_state_dict(self) -> dict[str, Any]:
        """Lightning's state dict; a full one from CPU ranks is taken in place, not offloaded."""
        if not _full_on_cpu(self, self.model):
            return super().lightning_module_state_dict()
        with full_state_dict_in_place(self.model, rank0_only=True):
            return self.model.state_dict()


class FabricOnCPU:
    """For Fabric's ``FSDPStrategy`` subclass: also runs on CPU with gloo."""

    adapt_arguments: Callable[[dict[str, Any]], dict[str, Any]] = staticmethod(translate.for_fabric)

    def setup_module(self, module: torch.nn.Module) -> torch.nn.Module:
        """Wrap ``module`` with ``device_id=cpu`` on CPU, then let Fabric finish its setup."""
        wrapped = _prewrap_on_cpu(self, module, self._fsdp_kwargs)
        if wrapped is module:  # on a GPU: Fabric wraps, with the policy
            return super().setup_module(module)
        with _policy_set_aside(self._fsdp_kwargs):
            return super().setup_module(wrapped)

    def module_sharded_context(self):
        """Fabric's context, or on CPU torch's ``enable_wrap`` with ``device_id=cpu``."""
        if self.root_device.type != "cpu":
            return super().module_sharded_context()
        return _sharded_context(self, self._fsdp_kwargs)

    def save_checkpoint(self, path: Any, state: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        """Fabric's ``save``; a full checkpoint from CPU ranks is taken in place, not offloaded."""
        save = super().save_checkpoint
        if not any(_full_on_cpu(self, value) for value in state.values()):
            return save(path, state, *args, **kwargs)
        with _full_state_dicts_in_place(save.__func__):
            return save(path, state, *args, **kwargs)


class LegacyArguments:
    """Binds a legacy signature, warns with the rule, translates, then builds FSDPStrategy."""

    _rule: str
    _signature: Any
    _translate: Callable[[dict[str, Any]], dict[str, Any]]
    adapt_arguments: Callable[[dict[str, Any]], dict[str, Any]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        given = given_arguments(f"{type(self).__name__}.__init__", self._signature, args, kwargs)
        # With the arguments: FSDP202's warning says what migrate does with this call.
        warn_deprecated(self._rule, arguments=described(given))
        super().__init__(**self.adapt_arguments(type(self)._translate(given)))


class FairScaleArguments(LegacyArguments):
    """Lightning 1.x's FairScale ``DDPFullyShardedStrategy`` arguments (FSDP202)."""

    _rule = "FSDP202"
    # It accepts FSDPStrategy's newer arguments as well, passed on like Lightning's own.
    _signature = legacy_signature(translate.DDP_FULLY_SHARDED_ARGUMENTS, extra=True)
    _translate = staticmethod(translate.translate_ddp_fully_sharded)


class NativeArguments(LegacyArguments):
    """Lightning 1.7-1.9's ``DDPFullyShardedNativeStrategy`` arguments (FSDP203)."""

    _rule = "FSDP203"
    _signature = legacy_signature(translate.DDP_FULLY_SHARDED_NATIVE_ARGUMENTS, extra=True)
    _translate = staticmethod(translate.translate_common)


class RemovedName:
    """A strategy string Lightning removed, registered again: warns with its rule."""

    def __init__(self, *, compat_rule: str, **kwargs: Any) -> None:
        warn_deprecated(compat_rule)
        super().__init__(**kwargs)


class LegacyClasses(NamedTuple):
    """One flavour's legacy strategy classes."""

    CPUCapableFSDPStrategy: type
    DDPFullyShardedStrategy: type
    DDPFullyShardedPlugin: type
    DDPFullyShardedNativeStrategy: type
    RemovedStrategyName: type


def legacy_classes(module: str, fsdp_strategy: type, side: type) -> LegacyClasses:
    """Compose one flavour's legacy classes, each homed in ``module`` under its own name.

    Args:
        module: The flavour module's ``__name__``; it must bind each class to its name.
        fsdp_strategy: That flavour's ``FSDPStrategy``.
        side: :class:`TrainerOnCPU` or :class:`FabricOnCPU`.
    """

    def declare(name: str, bases: tuple[type, ...], doc: str, **attributes: Any) -> type:
        namespace = {"__module__": module, "__qualname__": name, "__doc__": doc, **attributes}
        return types.new_class(name, bases, exec_body=lambda ns: ns.update(namespace))

    cpu = declare(
        "CPUCapableFSDPStrategy", (side, fsdp_strategy), "``FSDPStrategy``, also on CPU (gloo)."
    )
    fairscale = declare(
        "DDPFullyShardedStrategy",
        (FairScaleArguments, cpu),
        "Lightning 1.x's FairScale ``DDPFullyShardedStrategy``, as torch FSDP (FSDP202).",
    )
    return LegacyClasses(
        cpu,
        fairscale,
        declare(
            "DDPFullyShardedPlugin",
            (fairscale,),
            "Lightning 1.5's name of the FairScale strategy (FSDP201); pass it as ``strategy=``.",
            _rule="FSDP201",
        ),
        declare(
            "DDPFullyShardedNativeStrategy",
            (NativeArguments, cpu),
            "Lightning 1.7-1.9's ``DDPFullyShardedNativeStrategy``, now ``FSDPStrategy`` "
            "(FSDP203).",
        ),
        declare(
            "RemovedStrategyName",
            (RemovedName, cpu),
            'What a removed strategy string (``"fsdp_native"``, ...) builds, warning with its '
            "rule.",
        ),
    )
