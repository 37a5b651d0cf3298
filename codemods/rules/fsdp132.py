"""FSDP132: ``FSDP.optim_state_dict_to_load`` changed its positional order in torch 2.1.

torch 2.0 took ``(optim_state_dict, model, optim)``; 2.1 (pytorch/pytorch#96534) takes
``(model, optim, optim_state_dict)``, with no shim. The parameter names are the same in
both, so naming the arguments means the same on every release. Which order a call was
written in shows only in what its arguments are called: each of the first three
positional arguments gets a role from its source text (:func:`role`), and a call whose
roles read as one of the two orders is rewritten to keywords. A call in the new order
is right from 2.1 on, so it is reported only where the target is older.
"""

from __future__ import annotations

import ast
import re

from codemods.rules.api import Behaviour, Detector, Engine
from codemods.syntax.cst_nodes import is_plain_positional, keyword_arg
from codemods.syntax.gate_releases import ast_gate_floor, cst_gate_floor
from codemods.syntax.lazy_libcst import cst

#: The release whose order is ``(model, optim, optim_state_dict)``.
NEW_ORDER_SINCE = "2.1"
#: Each order as roles, and the keyword each role is passed by.
OLD_ORDER = ("state", "model", "optim")
NEW_ORDER = ("model", "optim", "state")
KEYWORDS = {"state": "optim_state_dict", "model": "model", "optim": "optim"}
#: The fourth positional parameter in both orders (the fifth differs: 2.1 added
#: ``load_directly`` before ``group``).
FOURTH = "is_named_optimizer"

_STATE = re.compile(r"state|ckpt|checkpoint|torch\.load|(^|_)o?sd(_|$|\d)")
_MODEL = re.compile(r"model|module|(^|_)(mod|net|network)(_|$|\d)")
_OPTIM = re.compile(r"optim|(^|_)opt(_|$|\d)")
_NAME = re.compile(r"[a-z_]\w*")


def role(text: str) -> str | None:
    """What an argument's source text says it is: ``state``, ``model``, ``optim`` or None.

    Example:
        >>> [role(t) for t in ("osd", 'ckpt["optimizer"]', "optim_sd", "self.model")]
        ['state', 'state', 'state', 'model']
        >>> [role(t) for t in ("mod_new", "opt_new", "self.optimizers[0]", "x")]
        ['model', 'optim', 'optim', None]
    """
    lowered = text.lower()
    names = _NAME.findall(lowered)
    name = names[-1] if names else ""  # `self.model`, `self.optimizers[0]`: its last
    if _STATE.search(lowered) or _STATE.search(name):
        return "state"
    if _MODEL.search(name):
        return "model"
    if _OPTIM.search(name):
        return "optim"
    return None


def decide(texts: list[str | None], target_new: bool) -> tuple[bool, list[str] | None]:
    """Whether to report a call, and the keywords for its leading positional arguments.

    Args:
        texts: The call's arguments in order: a positional one's source text, else None
            (a keyword argument, or ``*``/``**``, which :func:`decide` is not given).
        target_new: Whether the target release has the new order.

    Returns:
        ``(report, keywords)``; ``keywords`` (None: report only) names each leading
        positional argument.

    Example:
        >>> decide(["osd", "model", "optim"], True)
        (True, ['optim_state_dict', 'model', 'optim'])
        >>> decide(["model", "optim", "osd"], True)
        (False, None)
        >>> decide(["a", "b", "c"], True)
        (True, None)
    """
    positional = []
    for text in texts:
        if text is None:
            break
        positional.append(text)
    if not positional:
        return False, None
    if len(positional) not in (3, 4) or len(positional) < sum(t is not None for t in texts):
        return True, None  # a positional argument after a keyword cannot be: say so
    roles = tuple(role(text) for text in positional[:3])
    names = [KEYWORDS[r] for r in roles if r is not None] + [FOURTH][: len(positional) - 3]
    if roles == OLD_ORDER:
        return True, names
    if roles == NEW_ORDER:
        return (False, None) if target_new else (True, names)
    return True, None


def _gated_new(floor: tuple[int, int] | None) -> bool:
    """Whether a version gate around the call says it runs only where the order is new.

    OLMo writes ``if torch < 2.1: old order / else: new order``: the ``else`` call is
    right on every release it runs on, whatever the project's declared floor.
    """
    since = tuple(int(part) for part in NEW_ORDER_SINCE.split(".")[:2])
    return floor is not None and floor >= since


class Fsdp132(Behaviour):
    """Name the arguments of an ``optim_state_dict_to_load`` call passed by position."""

    def calls(self) -> tuple[str, ...]:
        return self.rule.old

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        args = list(original.args)
        if args and any(a.star for a in args):  # what lands where is not in the source
            engine.report(args[0], self.rule, fixable_here=False)
            return updated
        if not args or not is_plain_positional(args[0]):
            return updated
        code = cst.Module(body=[]).code_for_node
        texts = [code(a.value) if is_plain_positional(a) else None for a in args]
        floor = cst_gate_floor(engine.parent, original)
        new = engine.target_at_least(NEW_ORDER_SINCE) or _gated_new(floor)
        report, names = decide(texts, new)
        if not report or not engine.report(args[0], self.rule, fixable_here=names is not None):
            return updated
        if names is None:
            return updated
        new_args = list(updated.args)
        for index, name in enumerate(names):
            new_args[index] = keyword_arg(new_args[index], name, new_args[index].value)
        return updated.with_changes(args=new_args)

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        from codemods.syntax.ast_nodes import arguments, plain_positional, star, unparenthesized

        args = arguments(call)
        if args and any(star(a) for a in args):
            detector.report(unparenthesized(detector, args[0]), self.rule, fixable_here=False)
            return
        if not args or not plain_positional(args[0]):
            return
        first = unparenthesized(detector, args[0])
        texts = [detector.segment(a) if plain_positional(a) else None for a in args]
        floor = ast_gate_floor(detector.parent, detector.segment, call)
        new = detector.target_at_least(NEW_ORDER_SINCE) or _gated_new(floor)
        report, names = decide(texts, new)
        if report:
            detector.report(first, self.rule, fixable_here=names is not None)


BEHAVIOUR = Fsdp132
