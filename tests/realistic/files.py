"""Compose whole files of each kind: model, training script, policy module, FairScale.

Each composer takes the file's ``Spec`` (its path, kind and options, fixed by the plan in
``tests/realistic_tree.py``), the plan (what the other files define) and a random
source, and returns the file's text. Lightning, Fabric and test files are composed in
``tests.realistic.files_lightning``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from tests.realistic import (
    fairscale_parts,
    modeling,
    modeling_more,
    policy_parts,
    torch_shapes,
    training,
    utilities,
)
from tests.realistic.imports import COMMENTS, PRELUDES, import_table
from tests.realistic.source import SourceFile, fill

PACKAGE = "trainkit"
LINES = {  # the size range of each kind of file
    "model": (1000, 2500),
    "train": (300, 1300),
    "policies": (300, 700),
    "fsdp_utils": (400, 900),
    "fairscale": (300, 900),
    "plain": (300, 800),
    "lit": (400, 1400),
    "lit_test": (300, 900),
    "model_test": (300, 700),
    "fabric": (300, 900),
}


@dataclass
class Spec:
    """One file of the tree: where it goes, what kind it is, which shapes it carries."""

    path: str
    kind: str
    options: dict = field(default_factory=dict)

    @property
    def module(self) -> str:
        """The dotted module name (``trainkit/models/gpt.py`` -> ``trainkit.models.gpt``)."""
        return self.path[: -len(".py")].replace("/", ".")


@dataclass
class Plan:
    """Every file of the tree, and what the model modules define."""

    specs: list[Spec]

    def models(self) -> list[Spec]:
        """The model modules (their ``options["towers"]`` name the towers they define)."""
        return [s for s in self.specs if s.kind == "model"]

    def find(self, path: str) -> Spec | None:
        """The spec at ``path``, if the tree has it."""
        return next((s for s in self.specs if s.path == path), None)


def new_file(rng: random.Random) -> SourceFile:
    """An empty file that resolves imports from the table."""
    return SourceFile(rng, import_table(), PRELUDES, PACKAGE, COMMENTS)


def grow(
    f: SourceFile,
    rng: random.Random,
    kind: str,
    fillers: list[str],
    reserve: int = 0,
    least: int = 0,
):
    """Add ``fillers`` until the file reaches a seeded size in its kind's range.

    ``reserve`` lines are still to come (added after the fillers); ``least``: the file
    grows to at least this many lines where its fillers allow.
    """
    low, high = LINES[kind]
    target = max(rng.randint(low + 40, high - 80), least) - reserve
    for chunk in fillers:
        if f.line_count >= target:
            break
        if f.line_count + chunk.count("\n") + 3 <= high - 80 - reserve:
            f.add(chunk)


def import_model(f: SourceFile, model: Spec, P: str, names: tuple[str, ...]) -> None:
    """Bind ``P`` + each of ``names`` from the model module ``model``."""
    f.pin(*(f"from {model.module} import {P}{name}" for name in names))


def model_file(spec: Spec, plan: Plan, rng: random.Random) -> str:
    """A model module: one to four towers, extra parts, and a few FSDP lines."""
    f = new_file(rng)
    towers = spec.options["towers"]
    for P in towers:
        f.add(*modeling.transformer(rng, P))
    P, p = towers[0], towers[0].lower()
    fsdp = [fill(MODEL_FSDP[key], P=P, p=p, PU=P.upper()) for key in spec.options["fsdp"]]
    reserve = sum(c.count("\n") + 3 for c in fsdp)
    fillers = modeling_more.extras(rng, towers[-1], 8) + utilities.helpers(rng, 13)
    # a small draft tower (for speculative decoding) when the file is still short of its size
    fillers.append("\n\n\n".join(modeling.transformer(rng, f"{P}Draft")))
    least = spec.options.get("least", 0)
    if least:  # draft towers for the others too, enough to reach that size
        fillers += ["\n\n\n".join(modeling.transformer(rng, f"{t}Draft")) for t in towers[1:]]
    grow(f, rng, "model", fillers, reserve, least)
    f.add(*fsdp)
    doc = f"The {' / '.join(towers)} model{'s' if len(towers) > 1 else ''} and their parts."
    return f.render(doc, future=rng.random() < 0.7)


MODEL_FSDP = {
    "policy_function": '''
def ${p}_fsdp_policy() -> Callable:
    """The FSDP auto-wrap policy for ``${P}Model``: one unit per block."""
    return functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={${P}Block})
''',
    # issue 15, defect 18: a module-level partial that other modules import
    "policy_constant": """
# FSDP wraps each block in its own unit; the training scripts import this.
${PU}_WRAP_POLICY = partial(transformer_auto_wrap_policy, transformer_layer_cls={${P}Block})
${PU}_CHECKPOINT_LAYERS = (${P}Block,)
""",
    "size_policy": '''
def ${p}_size_policy(
    module: nn.Module, recurse: bool, unwrapped_params: int, min_num_params: int = int(5e7)
) -> bool:
    """Size-based wrapping that keeps ${P}Block units whole."""
    if isinstance(module, ${P}Block):
        return not recurse
    return recurse or unwrapped_params >= min_num_params
''',
    "checkpointing": '''
def ${p}_enable_checkpointing(model: "${P}Model") -> None:
    """Recompute each block in backward (reentrant, as torch 1.12 did by default)."""
    for index, block in enumerate(model.blocks):
        model.blocks[index] = checkpoint_wrapper(block)
''',
    "unwrap": '''
def ${p}_unwrap(model: nn.Module) -> "${P}Model":
    """The ``${P}Model`` inside FSDP (or DDP) wrappers."""
    while isinstance(model, (FSDP, DDP)):
        model = model.module
    return model
''',
    # issue 15, defect 13: a lambda policy
    "lambda_constant": """
# FSDP policy for torch 1.12 / 1.13: wrap anything over 20M parameters
${p}_wrap_policy = lambda module, recurse, unwrapped_params: (  # noqa: E731
    recurse or unwrapped_params > 20_000_000
)
""",
}


def _torch_ctx(spec: Spec, rng: random.Random, wrap: str = "wrap_model") -> dict:
    return dict(
        FSDP=spec.options.get("fsdp_name", "FSDP"),
        Block=spec.options["P"] + "Block",
        wrap=wrap,
        partial=spec.options.get("partial", "partial"),
    )


def train_file(spec: Spec, plan: Plan, rng: random.Random) -> str:
    """A training script: arguments, data, model, one way of wrapping, loop, checkpoints."""
    f = new_file(rng)
    model, P = plan.find(spec.options["model"]), spec.options["P"]
    import_model(f, model, P, ("Block", "Config", "Model"))
    ctx = _torch_ctx(spec, rng, rng.choice(["wrap_model", "shard_model", "setup_fsdp"]))
    wrap = spec.options["wrap"]
    if wrap == "imported":
        policies = plan.find(f"{PACKAGE}/policies/wrapping.py")
        f.pin(
            f"from {policies.module} import block_policy",
            f"from {policies.module} import get_policy",
        )
        chunks, head = [fill(IMPORTED_WRAP, wrap=ctx["wrap"], FSDP=ctx["FSDP"])], []
    else:
        chunks, head = torch_shapes.WRAPS[wrap](ctx)
    for extra in spec.options.get("extras", ()):
        chunks += torch_shapes.EXTRAS[extra](ctx)[0]
    f.add_head(*head)
    f.add(training.parse_args(rng, f"Train {P}Model with FSDP."))
    f.add(utilities.dataset(rng))
    parts = training.parts(rng, ctx["FSDP"], ctx["wrap"], "build_model", DATASET_EXPR)
    late = [fill(BUILD_MODEL, P=P)] + chunks + parts
    reserve = sum(c.count("\n") + 3 for c in late)
    grow(f, rng, "train", utilities.helpers(rng, 13, exclude=("TokenDataset",)), reserve)
    f.add(*late)
    return f.render(f"Train {P}Model with FSDP on one or more nodes (launch with torchrun).")


DATASET_EXPR = "SyntheticDataset(block_size=args.block_size)"

BUILD_MODEL = """
def build_model(args: argparse.Namespace) -> nn.Module:
    config = ${P}Config(block_size=args.block_size)
    return ${P}Model(config)
"""

IMPORTED_WRAP = """
def $wrap(model: nn.Module, args: argparse.Namespace) -> nn.Module:
    # the policies live in one place so every script wraps the same way
    policy = block_policy if args.min_num_params <= 0 else get_policy("size", args.min_num_params)
    return $FSDP(
        model,
        auto_wrap_policy=policy,
        mixed_precision=mixed_precision_policy(args.precision),
        device_id=torch.cuda.current_device(),
    )
"""


def policies_file(spec: Spec, plan: Plan, rng: random.Random) -> str:
    """A module of ``policies/``: wrapping, checkpointing or precision policies."""
    f = new_file(rng)
    role = spec.options["role"]
    (model, P), (other, Q) = spec.options["layers"]
    import_model(f, plan.find(model), P, ("Block",))
    import_model(f, plan.find(other), Q, ("Block",))
    ctx = dict(Block=f"{P}Block", Other=f"{Q}Block")
    fillers = utilities.helpers(rng, 13)
    if role == "wrapping":
        f.add(policy_parts.wrapping(ctx))
        torch_ctx = dict(ctx, FSDP="FSDP", wrap="wrap_with_or_policy", partial="partial")
        f.add(*torch_shapes.or_policy(torch_ctx)[0])
        torch_ctx["wrap"] = "wrap_by_class"
        f.add(*torch_shapes.lambda_partial(torch_ctx)[0])
        f.add(training.precision_chunk())
    elif role == "checkpointing":
        f.add(policy_parts.checkpointing(ctx))
        f.add(*torch_shapes.offload_checkpointing(ctx)[0])
    else:
        f.add(policy_parts.PRECISION.strip("\n"))
    grow(f, rng, "policies", fillers)
    return f.render(f"{role.capitalize()} policies for FSDP, shared by the training scripts.")


def fsdp_utils_file(spec: Spec, plan: Plan, rng: random.Random) -> str:
    """``fsdp_utils.py`` / ``wrapping.py``: several wraps, gates and fallbacks in one place."""
    f = new_file(rng)
    model, P = plan.find(spec.options["model"]), spec.options["P"]
    import_model(f, model, P, ("Block",))
    ctx = _torch_ctx(spec, rng)
    f.add(training.precision_chunk())
    for shape in spec.options["shapes"]:
        build = torch_shapes.WRAPS.get(shape) or torch_shapes.EXTRAS[shape]
        chunks, head = build(dict(ctx, wrap=f"wrap_{shape}", policy_name=f"{shape}_rule"))
        f.add_head(*head)
        f.add(*chunks)
    if spec.options.get("state_dicts"):
        f.add(policy_parts.STATE_DICTS.strip("\n"))
    grow(f, rng, "fsdp_utils", utilities.helpers(rng, 13))
    return f.render(
        "FSDP helpers: wrapping, mixed precision and state dicts across torch versions."
    )


def fairscale_file(spec: Spec, plan: Plan, rng: random.Random) -> str:
    """FairScale FSDP training: gated or plain imports, a policy, wrapping, the loop."""
    f = new_file(rng)
    model, P = plan.find(spec.options["model"]), spec.options["P"]
    import_model(f, model, P, ("Config", "Model"))
    style = spec.options["imports"]
    if style == "gated":
        f.add_head(fairscale_parts.GATED)
    elif style == "gated_lightning":
        f.add_head(fairscale_parts.GATED_LIGHTNING)
    else:
        names = (
            fairscale_parts.PUBLIC_REEXPORTS if style == "public" else fairscale_parts.SUBMODULES
        )
        f.pin(*names)
    ctx = dict(
        policy=rng.choice(["big_layers", "size_policy", "wrap_if_large"]),
        wrap=rng.choice(["shard", "wrap_model", "build_fsdp"]),
        wrap_layers="shard_layers",
        build="build_model",
        dataset="TensorDataset(torch.randn(1024, 16), torch.randint(0, 4, (1024,)))",
        size_partial=style.startswith("gated") or spec.options.get("size_partial", False),
    )
    late = [fill(BUILD_FAIRSCALE, P=P)] + fairscale_parts.parts(rng, ctx)
    reserve = sum(c.count("\n") + 3 for c in late)
    grow(f, rng, "fairscale", utilities.helpers(rng, 13), reserve)
    f.add(*late)
    return f.render("Sharded training with FairScale's FullyShardedDataParallel.")


BUILD_FAIRSCALE = '''
def build_model() -> nn.Module:
    """The network to shard; its blocks are wrapped one by one."""
    return ${P}Model(${P}Config())
'''


def plain_file(spec: Spec, plan: Plan, rng: random.Random) -> str:
    """Ordinary code with nothing to migrate: data, evaluation, utilities."""
    f = new_file(rng)
    fillers = utilities.helpers(rng, 13) + modeling_more.extras(rng, spec.options["P"], 8)
    rng.shuffle(fillers)
    grow(f, rng, "plain", fillers)
    return f.render(f"{spec.options['title']}.", future=rng.random() < 0.5)
