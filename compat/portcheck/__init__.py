"""The port checker: check an FSDP1 to FSDP2 port (by hand or by the codemod) by running it.

Give it two builders of your model, the FSDP1 one (or the script before migration) and
the FSDP2 one, and a batch function. It runs both in the same ranks (gloo on CPU, NCCL
with a GPU per rank) for a few steps, from the same seed and batches, and compares unit
by unit and step by step: the units and their arguments, tensors left on meta, the
initial full weights, every buffer on every rank (non-persistent ones too), the
optimizer's groups and whether it holds the model's parameters, tied weights, the dtypes
each unit's forward receives, the loss on every rank, the gradient norm, the full
weights after each step, and ``model.state_dict()``'s keys and tensor kinds. Where a
difference matches a known port bug (:data:`~compat.portcheck.causes.CAUSES`), the
report names it and what to write instead.

- A builder is ``(rank, world_size) -> (model, optimizer)``, called inside the process
  group the checker made (build the optimizer last, as your script does);
- the batch function ``(step, rank) -> batch``;
- the loss function ``(model, batch) -> loss`` (default:
  :func:`~compat.portcheck.spec.default_loss`).

Each may be a module-level function or a ``module:function`` spec. Use
:func:`rank_device` for the device (FSDP1's ``device_id``).

Python::

    from compat.portcheck import check_port
    report = check_port("train_fsdp1:build", "train_fsdp2:build", "train_fsdp1:batch", steps=3)
    print(report.render())        # or report.to_json()
    assert report.passed

pytest: :func:`assert_port_matches` (fails with the whole report). Command line::

    python -m compat.portcheck train_fsdp1:build train_fsdp2:build --batch train_fsdp1:batch

FSDP2 on CPU ranks needs torch >= 2.7 (:func:`~compat.portcheck.api.require_fsdp2`).
"""

from compat.portcheck.api import assert_port_matches, check_port, check_ports, require_fsdp2
from compat.portcheck.causes import CAUSES, Cause
from compat.portcheck.launch import RankError, rank_device
from compat.portcheck.report import Finding, PortReport, SideSummary, StepRow, UnitRow
from compat.portcheck.spec import PortCase, default_loss

__all__ = [
    "CAUSES",
    "Cause",
    "Finding",
    "PortCase",
    "PortReport",
    "RankError",
    "SideSummary",
    "StepRow",
    "UnitRow",
    "assert_port_matches",
    "check_port",
    "check_ports",
    "default_loss",
    "rank_device",
    "require_fsdp2",
]
