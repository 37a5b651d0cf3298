"""Distributed checkpoint's state-dict helpers and async staging (FSDP127-FSDP129)."""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import DCP

STATE_DICT_API = f"{DCP}.state_dict"


def _state_dict_api(*names: str) -> tuple[str, ...]:
    return tuple(f"{module}.{name}" for module in (STATE_DICT_API,) for name in names)


STATE_DICT_RULES = (
    Rule(
        code="FSDP127",
        name="state-dict-submodules",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=_state_dict_api("get_state_dict", "get_model_state_dict", "get_optimizer_state_dict"),
        new=f"{STATE_DICT_API}.get_model_state_dict",
        argument="submodules",
        message=(
            "`get_state_dict(..., submodules=...)` is deprecated: get the whole state dict "
            "and keep the submodules' keys"
        ),
        why=(
            "torch 2.4 deprecated getting the state dict of some submodules only "
            "(FutureWarning, announced for removal in 2.5, and still accepted in 2.13). The "
            "recipe: call without `submodules`, then keep the entries whose keys start "
            "with each submodule's qualified name plus a dot (the names come from "
            "`model.named_modules()`); the old default `keep_submodule_prefixes=True` kept "
            "those full keys, `False` stripped the prefix. Optimizer state is keyed by "
            "parameter names the same way. A human applies it: which keys a submodule "
            "owns depends on the model."
        ),
        example=Example(
            before=(
                "from torch.distributed.checkpoint.state_dict import get_model_state_dict\n"
                "state = get_model_state_dict(model, submodules={model.encoder})\n"
            ),
            after=(
                "from torch.distributed.checkpoint.state_dict import get_model_state_dict\n"
                "state = {\n"
                "    key: value\n"
                "    for key, value in get_model_state_dict(model).items()\n"
                '    if key.startswith("encoder.")\n'
                "}\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        introduced="2.2",
        deprecated="2.4",
        references=(
            "https://github.com/pytorch/pytorch/pull/127793",
            "https://pytorch.org/docs/stable/distributed.checkpoint.html",
        ),
        warns=(r"Getting submodules only model/optim state_dict is deprecated",),
        cases=(
            Example.reported_only(
                "import torch.distributed.checkpoint.state_dict as dsd\n"
                "model_sd, optim_sd = dsd.get_state_dict(\n"
                "    model, optimizer, submodules={model.head}, options=options\n"
                ")\n"
            ),
        ),
        untouched=(
            "from torch.distributed.checkpoint.state_dict import get_model_state_dict\n"
            "state = get_model_state_dict(model, options=options)\n",
            "state = get_model_state_dict(model, submodules={model.encoder})\n",
        ),
    ),
    Rule(
        code="FSDP128",
        name="module-keyed-state-dict",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=_state_dict_api("set_state_dict", "set_model_state_dict"),
        new=f"{STATE_DICT_API}.set_model_state_dict",
        message=(
            "a model state dict keyed by modules is deprecated: key it by parameter name, "
            "with each submodule's prefix"
        ),
        why=(
            "torch 2.4 deprecated passing `{submodule: state_dict}` to `set_state_dict` / "
            "`set_model_state_dict` (FutureWarning, announced for removal in 2.5, still "
            "accepted in 2.13). The recipe: merge the parts into one dict keyed by "
            "qualified names, prefixing each key with the submodule's name from "
            "`model.named_modules()`, and pass `StateDictOptions(strict=False)` where only "
            "part of the model is loaded. Found where the call holds the dict display; "
            "a dict built elsewhere is not followed."
        ),
        example=Example(
            before=(
                "from torch.distributed.checkpoint.state_dict import set_model_state_dict\n"
                "set_model_state_dict(model, {model.encoder: encoder_state}, options=options)\n"
            ),
            after=(
                "from torch.distributed.checkpoint.state_dict import set_model_state_dict\n"
                'state = {f"encoder.{key}": value for key, value in encoder_state.items()}\n'
                "set_model_state_dict(model, state, options=options)\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        introduced="2.2",
        deprecated="2.4",
        references=("https://github.com/pytorch/pytorch/pull/127793",),
        warns=(r"Passing model_state_dict as a ``Dict\[nn\.Module, Dict\[str, Any\]\]``",),
        cases=(
            Example.reported_only(
                "from torch.distributed.checkpoint.state_dict import set_state_dict\n"
                "set_state_dict(\n"
                "    model,\n"
                "    optimizer,\n"
                "    model_state_dict={model.backbone: backbone, model.layers[0]: first},\n"
                "    optim_state_dict=optim_state,\n"
                ")\n"
            ),
        ),
        untouched=(
            "from torch.distributed.checkpoint.state_dict import set_model_state_dict\n"
            'set_model_state_dict(model, {"encoder.weight": weight})\n',
            "from torch.distributed.checkpoint.state_dict import set_model_state_dict\n"
            "set_model_state_dict(model, {WEIGHT_KEY: weight})\n",
            "from torch.distributed.checkpoint.state_dict import set_model_state_dict\n"
            "set_model_state_dict(model, state_by_module)\n",
        ),
    ),
)

STAGING = f"{DCP}.staging"

STAGING_RULES = (
    Rule(
        code="FSDP129",
        name="async-stager-synchronize-staging",
        framework=Framework.TORCH,
        kind=ChangeKind.METHOD_RENAME,
        old=tuple(
            f"{STAGING}.{owner}.synchronize_staging"
            for owner in ("AsyncStager", "BlockingAsyncStager", "DefaultStager")
        ),
        new=f"{DCP}.state_dict_saver.AsyncSaveResponse.staging_completion",
        message=(
            "`AsyncStager.synchronize_staging` is deprecated: return a `Future` from "
            "`stage()` and wait on `async_save(...)`'s `staging_completion`"
        ),
        why=(
            "torch 2.9 deprecated `synchronize_staging` (FutureWarning from the base "
            "class's method; its message calls the replacement `staging_future`, the "
            "field is `AsyncSaveResponse.staging_completion`). A stager whose `stage()` "
            "returns a `Future` makes `async_save` return an `AsyncSaveResponse`, whose "
            "`staging_completion` future says when the copy is done and whose "
            "`upload_completion` says when the checkpoint is written; `synchronize_staging` "
            "is only called for stagers that still return the state dict itself. The "
            "rewrite changes how the stager works and what `async_save` returns, so it is "
            "left for a human. Found where a stager subclass of the file defines the "
            "method; calls on stagers made elsewhere are not."
        ),
        example=Example(
            before=(
                "from torch.distributed.checkpoint.staging import AsyncStager\n"
                "class PinnedStager(AsyncStager):\n"
                "    def stage(self, state_dict):\n"
                "        self._copy = copy_to_pinned(state_dict)\n"
                "        return self._copy\n"
                "    def synchronize_staging(self):\n"
                "        torch.cuda.current_stream().synchronize()\n"
            ),
            after=(
                "from concurrent.futures import ThreadPoolExecutor\n"
                "from torch.distributed.checkpoint.staging import AsyncStager\n"
                "class PinnedStager(AsyncStager):\n"
                "    def __init__(self):\n"
                "        self._pool = ThreadPoolExecutor(1)\n"
                "    def stage(self, state_dict):\n"
                "        return self._pool.submit(copy_to_pinned, state_dict)\n"
                "response = async_save(state, storage_writer=writer, async_stager=PinnedStager())\n"
                "response.staging_completion.result()\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        introduced="2.9",
        deprecated="2.9",
        references=("https://pytorch.org/docs/stable/distributed.checkpoint.html",),
        warns=(r"`synchronize_staging` is deprecated and will be removed",),
        cases=(
            Example.reported_only(
                "import torch.distributed.checkpoint.staging as staging\n"
                "class Stager(staging.BlockingAsyncStager):\n"
                "    def synchronize_staging(self):\n"
                "        super().synchronize_staging()\n"
                "        self.done.set()\n"
            ),
        ),
        untouched=(
            "class Stager:\n    def synchronize_staging(self):\n        pass\n",
            "from torch.distributed.checkpoint.staging import AsyncStager\n"
            "class Stager(AsyncStager):\n"
            "    def stage(self, state_dict):\n"
            "        return self.pool.submit(copy, state_dict)\n",
        ),
    ),
)

RULES = STATE_DICT_RULES + STAGING_RULES
