"""torch's activation-checkpointing helper, renamed after its first release (FSDP138)."""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import CHECKPOINT_WRAPPER

_OLD = f"{CHECKPOINT_WRAPPER}.apply_activation_checkpointing_wrapper"

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
)
