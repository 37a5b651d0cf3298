"""``python -m compat.portcheck BEFORE AFTER --batch SPEC``: the port checker's command.

Exit status: 0 when the port matches, 1 when it differs (the report says how), 2 when
it cannot run (bad arguments, a torch without FSDP2 on these devices, a rank that
crashed). Under ``torchrun`` it uses torchrun's ranks and rank 0 prints. Standard output
holds the report alone: while the check runs, what the ranks write there (the builders'
prints, gloo's connection lines from torch 2.9) goes to standard error.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import torch.distributed as dist

from compat.portcheck.api import check_port


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m compat.portcheck",
        description=(
            "Run an FSDP1 model and its FSDP2 port side by side on N ranks and compare units, "
            "weights, buffers, losses, gradient norms, optimizer groups and state dicts. "
            "Specs are module:function or path/to/file.py:function."
        ),
    )
    parser.add_argument(
        "before", help="builder of the reference: (rank, world_size) -> (model, optimizer)"
    )
    parser.add_argument("after", help="builder of the port, the same signature")
    parser.add_argument("--batch", required=True, help="(step, rank) -> batch")
    parser.add_argument(
        "--loss", help="(model, batch) -> loss (default: see compat.portcheck.default_loss)"
    )
    parser.add_argument("--steps", type=int, default=3, help="optimizer steps (default 3)")
    parser.add_argument(
        "--accumulate", type=int, default=1, help="micro-batches per step (default 1)"
    )
    parser.add_argument("--max-norm", type=float, help="clip gradients to this norm")
    parser.add_argument("--world-size", type=int, default=2, help="ranks to start (default 2)")
    parser.add_argument(
        "--backend", choices=("gloo", "nccl"), help="default: nccl with a GPU per rank"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--distinct-seeds", action="store_true", help="seed rank r with seed + r")
    parser.add_argument("--atol", type=float, default=1e-5)
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds (default 600)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--output", type=Path, help="also write the JSON report to this file")
    return parser


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Point file descriptor 1 at standard error, for this process and those it starts.

    At the descriptor, not ``sys.stdout``: torch's C++ code (gloo) writes to it directly,
    and the ranks (and the fork server they come from) inherit it.
    """
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _join_torchrun() -> bool:
    # Under torchrun the ranks exist already: join their group instead of starting ranks.
    import torch

    if "WORLD_SIZE" not in os.environ or "RANK" not in os.environ or dist.is_initialized():
        return False
    backend = "nccl" if torch.cuda.is_available() and dist.is_nccl_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend)
    return True


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    args = _parser().parse_args(argv)
    sys.path.insert(0, os.getcwd())  # specs name modules of the directory it runs in
    joined = False
    try:
        with _stdout_to_stderr():
            joined = _join_torchrun()
            report = check_port(
                args.before,
                args.after,
                args.batch,
                loss=args.loss,
                steps=args.steps,
                accumulate=args.accumulate,
                max_norm=args.max_norm,
                seed=args.seed,
                distinct_seeds=args.distinct_seeds,
                atol=args.atol,
                rtol=args.rtol,
                world_size=args.world_size,
                backend=args.backend,
                timeout=args.timeout,
            )
    except Exception as error:  # noqa: BLE001 - every failure to run is reported the same way
        print(f"python -m compat.portcheck: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    finally:
        if joined:
            dist.destroy_process_group()
    if not joined or int(os.environ["RANK"]) == 0:
        print(report.to_json() if args.json else report.render().rstrip("\n"))
        if args.output:
            args.output.write_text(report.to_json() + "\n", encoding="utf-8")
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
