"""torch's activation-checkpointing helper and wrapper (FSDP138, FSDP139).

FSDP138 is the helper's 1.12 name; FSDP139 the ``offload_to_cpu=False`` that torch 2.0's
``checkpoint_wrapper`` no longer takes (``offload_to_cpu=True``, which has a new form of
its own, is FSDP133 in :mod:`codemods.registry.torch_fsdp_rules`).
"""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import CHECKPOINT_WRAPPER

_OLD = f"{CHECKPOINT_WRAPPER}.apply_activation_checkpointing_wrapper"
_WRAPPER = f"{CHECKPOINT_WRAPPER}.checkpoint_wrapper"

RULES = (
    Rule(
        code="FSDP138",
        name="apply-activation-checkpointing-wrapper",
        framework=Framework.TORCH,
        kind=ChangeKind.SYMBOL_RENAME,
        old=(_OLD,),
        new=f"{CHECKPOINT_WRAPPER}.apply_activation_checkpointing",
        message=(
            "`apply_activation_checkpointing_wrapper` was renamed `apply_activation_checkpointing`"
        ),
        why=(
            "torch 1.12 shipped the helper that wraps the submodules a `check_fn` selects as "
            "`apply_activation_checkpointing_wrapper`; torch 1.13 renamed it "
            "`apply_activation_checkpointing` (pytorch PR 85449) and kept no alias, so the old "
            "import fails with ImportError on every torch since. The parameters are the same "
            "(`model, checkpoint_wrapper_fn=checkpoint_wrapper, check_fn=...`); torch 2.1 "
            "added `auto_wrap_policy=` after them."
        ),
        example=Example(
            before=(
                f"from {CHECKPOINT_WRAPPER} import apply_activation_checkpointing_wrapper\n"
                "apply_activation_checkpointing_wrapper(model, check_fn=is_block)\n"
            ),
            after=(
                f"from {CHECKPOINT_WRAPPER} import apply_activation_checkpointing\n"
                "apply_activation_checkpointing(model, check_fn=is_block)\n"
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="1.13",
        removed="1.13",
        references=(
            "https://github.com/pytorch/pytorch/issues/81467",
            "https://github.com/pytorch/pytorch/pull/85449",
        ),
        cases=(
            Example(
                before=(
                    f"from {CHECKPOINT_WRAPPER} import (\n"
                    "    CheckpointImpl,\n"
                    "    apply_activation_checkpointing_wrapper,  # every decoder layer\n"
                    "    checkpoint_wrapper,\n"
                    ")\n"
                    "def apply_ac(model, check_fn, wrapper_fn=checkpoint_wrapper):\n"
                    "    apply_activation_checkpointing_wrapper(\n"
                    "        model, checkpoint_wrapper_fn=wrapper_fn, check_fn=check_fn\n"
                    "    )\n"
                ),
                after=(
                    f"from {CHECKPOINT_WRAPPER} import (\n"
                    "    CheckpointImpl,\n"
                    "    apply_activation_checkpointing,  # every decoder layer\n"
                    "    checkpoint_wrapper,\n"
                    ")\n"
                    "def apply_ac(model, check_fn, wrapper_fn=checkpoint_wrapper):\n"
                    "    apply_activation_checkpointing(\n"
                    "        model, checkpoint_wrapper_fn=wrapper_fn, check_fn=check_fn\n"
                    "    )\n"
                ),
            ),
            Example(
                before=(
                    f"import {CHECKPOINT_WRAPPER} as ac\n"
                    "ac.apply_activation_checkpointing_wrapper(model, check_fn=is_block)\n"
                ),
                after=(
                    f"import {CHECKPOINT_WRAPPER} as ac\n"
                    "ac.apply_activation_checkpointing(model, check_fn=is_block)\n"
                ),
            ),
            Example(
                before=(
                    f"from {CHECKPOINT_WRAPPER} import apply_activation_checkpointing_wrapper "
                    "as apply_ac\n"
                    "apply_ac(model, check_fn=is_block)\n"
                ),
                after=(
                    f"from {CHECKPOINT_WRAPPER} import apply_activation_checkpointing as "
                    "apply_ac\n"
                    "apply_ac(model, check_fn=is_block)\n"
                ),
            ),
        ),
        untouched=(
            (
                f"from {CHECKPOINT_WRAPPER} import apply_activation_checkpointing\n"
                "apply_activation_checkpointing(model, check_fn=is_block)\n"
            ),
            (
                "try:\n"
                f"    from {CHECKPOINT_WRAPPER} import apply_activation_checkpointing\n"
                "except ImportError:  # torch 1.12\n"
                f"    from {CHECKPOINT_WRAPPER} import (\n"
                "        apply_activation_checkpointing_wrapper as "
                "apply_activation_checkpointing,\n"
                "    )\n"
            ),
            (
                "def apply_activation_checkpointing_wrapper(model, check_fn):\n"
                "    return model\n"
                "apply_activation_checkpointing_wrapper(model, check_fn=is_block)\n"
            ),
        ),
    ),
    Rule(
        code="FSDP139",
        name="checkpoint-wrapper-offload-false",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=(_WRAPPER,),
        new=_WRAPPER,
        argument="offload_to_cpu",
        message=(
            "`checkpoint_wrapper(offload_to_cpu=False)`: torch 2.0 removed the keyword (it now "
            "reaches the module's forward: TypeError); drop it, `False` was the default"
        ),
        why=(
            "torch 1.11 gave `checkpoint_wrapper` an `offload_to_cpu` flag, off by default; "
            "torch 2.0 removed it (pytorch PR 85459) with no deprecation. Since then the "
            "wrapper hands unknown keywords to its checkpoint function, which passes them to "
            "the wrapped module, so `offload_to_cpu=False` builds and the first forward "
            "raises `TypeError` (`ValueError` on 2.1). Without the keyword the call does what "
            "it did with it on 1.11 to 1.13, and runs on every torch: the fix drops it, "
            "whatever the range. (`offload_to_cpu=True` meant offloading: FSDP133.)"
        ),
        example=Example(
            before=(
                "from functools import partial\n"
                f"from {CHECKPOINT_WRAPPER} import CheckpointImpl, checkpoint_wrapper\n"
                "wrapper = partial(\n"
                "    checkpoint_wrapper,\n"
                "    offload_to_cpu=False,\n"
                "    checkpoint_impl=CheckpointImpl.NO_REENTRANT,\n"
                ")\n"
            ),
            after=(
                "from functools import partial\n"
                f"from {CHECKPOINT_WRAPPER} import CheckpointImpl, checkpoint_wrapper\n"
                "wrapper = partial(\n"
                "    checkpoint_wrapper,\n"
                "    checkpoint_impl=CheckpointImpl.NO_REENTRANT,\n"
                ")\n"
            ),
        ),
        fix=FixSafety.SAFE,
        removed="2.0",
        references=(
            "https://github.com/pytorch/pytorch/pull/70165",
            "https://github.com/pytorch/pytorch/pull/85459",
        ),
        cases=(
            Example(
                before=(
                    f"import {CHECKPOINT_WRAPPER} as ac\n"
                    "layers = [ac.checkpoint_wrapper(layer, offload_to_cpu=False) "
                    "for layer in layers]\n"
                ),
                after=(
                    f"import {CHECKPOINT_WRAPPER} as ac\n"
                    "layers = [ac.checkpoint_wrapper(layer) for layer in layers]\n"
                ),
            ),
            Example.reported_only(
                f"from {CHECKPOINT_WRAPPER} import checkpoint_wrapper\n"
                "block = checkpoint_wrapper(block, offload_to_cpu=False, **options)\n"
            ),
        ),
        untouched=(
            (
                f"from {CHECKPOINT_WRAPPER} import checkpoint_wrapper\n"
                "block = checkpoint_wrapper(block)\n"
            ),
            (
                "from fairscale.nn.checkpoint import checkpoint_wrapper\n"
                "block = checkpoint_wrapper(block, offload_to_cpu=False)\n"
            ),
            (  # FSDP133 reported this line before FSDP139 took it: its noqa still holds
                f"from {CHECKPOINT_WRAPPER} import checkpoint_wrapper\n"
                "block = checkpoint_wrapper(block, offload_to_cpu=False)  # noqa: FSDP133\n"
            ),
        ),
    ),
)
