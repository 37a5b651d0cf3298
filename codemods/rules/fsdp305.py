"""FSDP305: FairScale's ``default_auto_wrap_policy`` as torch's size policy (unsafe).

FairScale's ``enable_wrap``/``auto_wrap`` call a policy with ``unwrapped_params=``,
which torch's ``size_based_auto_wrap_policy`` (since torch 2.0) does not take. So the
policy moves only where no FairScale consumer is left in the file: FairScale's FSDP and
``enable_wrap`` move too (FSDP301, FSDP302), and there is no ``auto_wrap`` (FSDP304,
which has no torch counterpart).
"""

from __future__ import annotations

from codemods.rules.api import CallSiteFix, unchanged
from codemods.rules.kinds.reference import Renamed


class Fsdp305(Renamed):
    """A plain rename, coupled to the FairScale consumers of the policy."""

    rename = CallSiteFix(
        unchanged,
        bare_references=True,
        partials=True,
        requires=("FSDP301", "FSDP302"),
        blocked_by=("FSDP304",),
    )


BEHAVIOUR = Fsdp305
