"""FSDP104: ``partial(lambda_auto_wrap_policy, lambda_fn=f)`` as ``CustomPolicy(f)``.

The same rewrite as FSDP103's, see :mod:`codemods.rules.fsdp103`.
"""

from __future__ import annotations

from codemods.rules.fsdp103 import PolicyPartial

BEHAVIOUR = PolicyPartial
