"""A tree of realistic legacy FSDP code, of this project's own writing, for tests and benchmarks.

``write_tree(root, files=60, seed=0)`` writes a package (``trainkit/``) and its tests
(``tests/``): model files of 1,000-2,500 lines with a few FSDP lines each, training
scripts (torch 1.11-2.0 wrapping, checkpointing with ``FSDP.state_dict_type``), policy
modules other modules import, Lightning 1.x modules and tests, FairScale code, Lite and
Fabric scripts, and ordinary modules with nothing to migrate. Every shape of issue 15's
defects appears somewhere; most files have findings, some none.

The same ``files`` and ``seed`` always give the same bytes. ``files`` counts the modules of
300-2,500 lines; a few short ``__init__.py`` files come on top. A few files have CRLF
line endings and a few lack the final newline. Before migration every file parses and
pyflakes finds nothing in it.

>>> [spec.path for spec in plan_tree(3)]
['trainkit/models/gpt.py', 'trainkit/models/llama.py', 'trainkit/policies/wrapping.py']
"""

from __future__ import annotations

import functools
import random
from pathlib import Path

from tests.realistic.files import (
    PACKAGE,
    Plan,
    Spec,
    fairscale_file,
    fsdp_utils_file,
    model_file,
    plain_file,
    policies_file,
    train_file,
)
from tests.realistic.files_lightning import fabric_file, lit_file, lit_test_file, model_test_file
from tests.realistic.torch_shapes import WRAPS

COMPOSERS = {
    "model": model_file,
    "train": train_file,
    "policies": policies_file,
    "fsdp_utils": fsdp_utils_file,
    "fairscale": fairscale_file,
    "plain": plain_file,
    "lit": lit_file,
    "lit_test": lit_test_file,
    "model_test": model_test_file,
    "fabric": fabric_file,
}

_TOWERS = (
    "Gpt Llama Text Vision Audio Encoder Decoder Retrieval Code Reward Critic Draft Student "
    "Teacher Chat Speech Query Memory Prior Value Policy Router Summary Caption Image Video "
    "Music Protein Molecule Graph Table Math Search Ranker Planner Verifier Judge Tutor Agent"
).split()

_MODELS = [  # model module name, the FSDP lines it carries (issue 15 defects in comments)
    ("gpt", ["policy_constant", "unwrap"]),  # 18: a partial imported elsewhere
    ("llama", ["policy_function", "checkpointing"]),
    ("vit_lm", ["size_policy"]),
    ("encoder_decoder", []),
    ("moe_lm", ["lambda_constant"]),  # 13: a lambda policy
    ("multimodal", ["policy_function"]),
    ("reward", []),
    ("draft", ["unwrap"]),
]

_TRAIN = [  # wrap shape, extra chunks
    ("size_partial", ["policy_name"]),  # 1: default_auto_wrap_policy.__name__ in an f-string
    ("custom_policy", []),
    ("lambda_policy", []),  # 13
    ("transformer_local", ["checkpointing"]),  # 5: partial(checkpoint_wrapper, impl=...)
    ("transformer_conditional", []),  # 18: a if big else b
    ("lambda_partial", []),
    ("version_gate", []),  # 4
    ("flag_gate", []),
    ("import_fallback", []),
    ("torch_111", []),  # 15: fsdp_auto_wrap_policy=
    ("manual_wrap", ["offload_checkpointing"]),  # 6: checkpoint_wrapper(..., offload_to_cpu)
    ("module_alias", []),
    ("imported", []),
]

_LIT = [  # flavor, strategy, precision, further options
    ("pl1", "native_partial", "16", {}),  # 10
    ("pl1", "native_chain", '"bf16"', {"inline": True}),
    ("pl1", "native_string", "16", {}),
    ("pl1", "fairscale_strategy", "16", {"indirect": True}),  # 12: hook in a subclass
    ("pl1", "fairscale_string", "32", {"inline": True}),
    ("pl1", "native_name", '"bf16"', {}),  # 1: Old.strategy_name in an f-string
    ("L", "native_string", '"bf16"', {}),  # 16: L.Trainer(precision="bf16")
    ("pl2", "fsdp_strategy_partial", '"bf16"', {}),  # 17: the partial's comment
    ("pl1", "native_partial", "16", {"plugin": "native_amp"}),  # 15
    ("pl1", "fairscale_plugin", "16", {"plugin": "native_native_amp"}),  # 15
    ("pl1", "native_partial", '"16-mixed"', {"compat": True, "hook": "build_model"}),
]


def _anchors(rng: random.Random) -> list[Spec]:
    """The files every tree of enough size has, so that every shape is covered."""
    towers = iter(rng.sample(_TOWERS, len(_TOWERS)))
    models = []
    for name, fsdp in _MODELS:
        count = rng.choice([2, 2, 3, 4])
        models.append(
            Spec(
                f"{PACKAGE}/models/{name}.py",
                "model",
                {"towers": [next(towers) for _ in range(count)], "fsdp": fsdp},
            )
        )
    # The largest file with findings is over 2,000 lines (issue 18's one-file figure).
    models[1].options["least"] = 2_150

    def main(index: int) -> tuple[str, str]:
        model = models[index % len(models)]
        return model.path, model.options["towers"][0]

    specs = models[:2]
    layers = [main(0), main(1)]
    specs.append(
        Spec(f"{PACKAGE}/policies/wrapping.py", "policies", {"role": "wrapping", "layers": layers})
    )
    specs += models[2:]
    specs.append(
        Spec(
            f"{PACKAGE}/policies/activation_checkpointing.py",
            "policies",
            {"role": "checkpointing", "layers": layers},
        )
    )
    specs.append(
        Spec(
            f"{PACKAGE}/policies/mixed_precision.py",
            "policies",
            {"role": "precision", "layers": layers},
        )
    )
    model, P = main(2)
    specs.append(
        Spec(
            f"{PACKAGE}/fsdp_utils.py",
            "fsdp_utils",
            {
                "model": model,
                "P": P,
                "state_dicts": True,
                "shapes": ["version_gate", "flag_gate", "policy_name", "fsdp2"],
            },
        )
    )
    specs.append(
        Spec(
            f"{PACKAGE}/wrapping.py",
            "fsdp_utils",
            {
                "model": model,
                "P": P,
                "fsdp_name": "FullyShardedDataParallel",
                "shapes": ["import_fallback", "torch_111", "custom_policy", "module_alias"],
            },
        )
    )
    for index, (wrap, extras) in enumerate(_TRAIN):
        model, P = main(index)
        verb = rng.choice(["train", "pretrain", "finetune"])
        specs.append(
            Spec(
                f"{PACKAGE}/scripts/{verb}_{wrap}.py",
                "train",
                {
                    "model": model,
                    "P": P,
                    "wrap": wrap,
                    "extras": extras,
                    "fsdp_name": rng.choice(["FSDP", "FullyShardedDataParallel"]),
                    "partial": rng.choice(["partial", "functools.partial"]),
                },
            )
        )
    for index, (flavor, strategy, precision, extra) in enumerate(_LIT):
        model, P = main(index + 3)
        if extra.get("inline"):
            P = next(towers)
        options = dict(
            flavor=flavor, strategy=strategy, precision=precision, model=model, P=P, **extra
        )
        specs.append(Spec(f"{PACKAGE}/lightning/{strategy}_{index}.py", "lit", options))
    test_models = [m.path for m in models]
    tests = [
        ("pl1", ["names", "policies", "fairscale"]),  # defects 1 and 3
        ("pl1", []),
        ("pl2", ["policies"]),
        ("pl1", ["fairscale"]),
    ]
    for index, (flavor, shapes) in enumerate(tests):
        options = dict(flavor=flavor, shapes=shapes, P=f"Fsdp{index}", models=[test_models[index]])
        specs.append(Spec(f"tests/test_fsdp_strategy_{index}.py", "lit_test", options))
    for index in range(3):
        specs.append(
            Spec(
                f"tests/test_models_{index}.py",
                "model_test",
                {"models": test_models[4 + index : 5 + index] + test_models[index : index + 1]},
            )
        )
    for index, (style, size_partial) in enumerate(
        [
            ("public", False),
            ("submodules", False),
            ("gated", True),
            ("gated_lightning", True),
            ("public", True),
        ]
    ):
        model, P = main(index)
        specs.append(
            Spec(
                f"{PACKAGE}/legacy/fairscale_{style}_{index}.py",
                "fairscale",
                {"model": model, "P": P, "imports": style, "size_partial": size_partial},
            )
        )
    for style in ("lite", "fabric"):
        model, P = main(5)
        specs.append(
            Spec(
                f"{PACKAGE}/scripts/{style}_train.py",
                "fabric",
                {"style": style, "model": model, "P": P},
            )
        )
    for path, title in [
        ("data/pipeline.py", "Data loading and batching"),
        ("eval/metrics.py", "Evaluation metrics"),
        ("utils/misc.py", "Odds and ends"),
    ]:
        specs.append(Spec(f"{PACKAGE}/{path}", "plain", {"P": next(towers), "title": title}))
    return specs


def _more(rng: random.Random, specs: list[Spec], number: int) -> Spec:
    """One more file beyond the anchors, of a seeded kind with seeded shapes."""
    models = [s for s in specs if s.kind == "model"]
    model = rng.choice(models)
    P = model.options["towers"][0]
    kind = rng.choices(
        ["train", "lit", "model", "fairscale", "lit_test", "model_test", "plain"],
        weights=[30, 20, 15, 10, 10, 5, 10],
    )[0]
    if kind == "train":
        wrap = rng.choice([*WRAPS, "imported"])
        extras = rng.sample(["checkpointing", "offload_checkpointing", "policy_name", "fsdp2"], 2)
        options = dict(model=model.path, P=P, wrap=wrap, extras=extras[: rng.randint(0, 2)])
        options.update(fsdp_name=rng.choice(["FSDP", "FullyShardedDataParallel"]))
        options.update(partial=rng.choice(["partial", "functools.partial"]))
        return Spec(f"{PACKAGE}/scripts/train_{wrap}_{number}.py", kind, options)
    if kind == "lit":
        strategy = rng.choice(["native_partial", "native_chain", "native_string", "native_name"])
        precision = rng.choice(["16", '"bf16"', "32", '"16-mixed"', "'bf16'"])
        options = dict(flavor="pl1", strategy=strategy, precision=precision, model=model.path, P=P)
        return Spec(f"{PACKAGE}/lightning/{strategy}_{number}.py", kind, options)
    if kind == "model":
        used = {t for s in models for t in s.options["towers"]}
        free = [t for t in _TOWERS if t not in used] or [f"Extra{number}"]
        fsdp = rng.sample(["policy_function", "size_policy", "checkpointing", "unwrap"], 2)
        options = dict(towers=free[: rng.randint(2, 3)], fsdp=fsdp[: rng.randint(0, 2)])
        return Spec(f"{PACKAGE}/models/model_{number}.py", kind, options)
    if kind == "fairscale":
        style = rng.choice(["public", "submodules", "gated"])
        options = dict(model=model.path, P=P, imports=style, size_partial=rng.random() < 0.5)
        return Spec(f"{PACKAGE}/legacy/fairscale_{number}.py", kind, options)
    if kind == "lit_test":
        shapes = [s for s in ("names", "policies", "fairscale") if rng.random() < 0.4]
        options = dict(flavor="pl1", shapes=shapes, P=f"Fsdp{number}", models=[model.path])
        return Spec(f"tests/test_fsdp_{number}.py", kind, options)
    if kind == "model_test":
        return Spec(f"tests/test_model_{number}.py", kind, {"models": [model.path]})
    title = rng.choice(["Tokenisation helpers", "Evaluation loops", "Experiment utilities"])
    return Spec(
        f"{PACKAGE}/utils/helpers_{number}.py", "plain", {"P": f"Aux{number}", "title": title}
    )


def plan_tree(files: int = 60, seed: int = 0) -> list[Spec]:
    """The specs of the tree's modules (paths, kinds, shapes), without writing anything."""
    rng = random.Random(seed)
    specs = _anchors(rng)[:files]
    while len(specs) < files:
        specs.append(_more(rng, specs, len(specs)))
    endings = rng.sample(range(len(specs)), min(6, len(specs)))
    for index in endings[:3]:
        specs[index].options["crlf"] = True
    for index in endings[3:]:
        specs[index].options["no_final_newline"] = True
    return specs


def _inits(specs: list[Spec]) -> dict[str, str]:
    """Short ``__init__.py`` files for the package and its subpackages."""
    inits = {
        f"{PACKAGE}/__init__.py": '"""Training code for our models."""\n\n__version__ = "0.4.1"\n'
    }
    for spec in specs:
        parts = spec.path.split("/")[:-1]
        for depth in range(2, len(parts) + 1):
            if parts[0] == PACKAGE:
                path = "/".join(parts[:depth]) + "/__init__.py"
                inits.setdefault(path, f'"""The {parts[depth - 1]} of {PACKAGE}."""\n')
    if any(s.path == f"{PACKAGE}/policies/wrapping.py" for s in specs):
        inits[f"{PACKAGE}/policies/__init__.py"] = POLICIES_INIT
    return inits


POLICIES_INIT = f'''"""Wrapping, checkpointing and mixed-precision policies for FSDP."""

from {PACKAGE}.policies.wrapping import block_policy, get_policy, get_size_policy

__all__ = ["block_policy", "get_policy", "get_size_policy"]
'''


def tree_paths(files: int = 60, seed: int = 0) -> list[str]:
    """The relative paths ``write_tree`` writes, sorted (cheap: nothing is composed)."""
    specs = plan_tree(files, seed)
    return sorted([s.path for s in specs] + list(_inits(specs)))


def repeated_models(files: int = 60, seed: int = 0) -> set[str]:
    """The model modules whose FSDP lines earlier model modules of the tree already carry.

    The model files are one composer's variations (towers of the same templates, with a
    few random choices, under other names); where they differ for a migration is the FSDP
    lines each carries (``options["fsdp"]``). A check that costs seconds per model file
    may skip these: the model files it keeps still carry every FSDP shape of the tree,
    and one of them carries none. Every other kind of file is kept.

    >>> sorted(repeated_models(16))
    ['trainkit/models/draft.py', 'trainkit/models/multimodal.py', 'trainkit/models/reward.py']
    """
    carried: set[str] = set()
    bare = False  # a model without FSDP lines is kept
    repeated = set()
    for spec in plan_tree(files, seed):
        if spec.kind != "model":
            continue
        shapes = set(spec.options["fsdp"])
        if shapes - carried or not (shapes or bare):
            carried |= shapes
            bare = bare or not shapes
        else:
            repeated.add(spec.path)
    return repeated


def build_tree(files: int = 60, seed: int = 0) -> dict[str, bytes]:
    """Every file of the tree: relative path -> bytes (what ``write_tree`` writes).

    Composed once per process for each size and seed (0.2 to 0.5 s: a dozen test modules
    build the same few trees, most of them while pytest collects); each caller gets its
    own dict.
    """
    return dict(_built(files, seed))


@functools.cache
def _built(files: int, seed: int) -> tuple[tuple[str, bytes], ...]:
    return tuple(compose_tree(files, seed).items())


def compose_tree(files: int = 60, seed: int = 0) -> dict[str, bytes]:
    """:func:`build_tree`'s files, composed anew (the tree's determinism is tested on it)."""
    specs = plan_tree(files, seed)
    plan = Plan(specs)
    tree = {path: text.encode() for path, text in _inits(specs).items()}
    for spec in specs:
        # a file's text depends only on its spec, not on the files planned beside it
        text = COMPOSERS[spec.kind](spec, plan, random.Random(f"{seed}:{spec.path}"))
        if spec.options.get("no_final_newline"):
            text = text.rstrip("\n")
        if spec.options.get("crlf"):
            text = text.replace("\n", "\r\n")
        tree[spec.path] = text.encode()
    return tree


def write_tree(root: Path, files: int = 60, seed: int = 0) -> list[Path]:
    """Write the tree under ``root``; return the paths written, sorted."""
    written = []
    for relative, data in sorted(build_tree(files, seed).items()):
        path = Path(root) / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written.append(path)
    return written
