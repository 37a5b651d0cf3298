"""The FSDP2 statements FSDP401 writes before a wrapper call that converts.

The root's binding, the keyword values bound once and the loop sharding each unit, laid
out as formatters do where a line would be long (:mod:`codemods.rules.layout`); the call
itself becomes ``fully_shard(root, ...)`` in the hook (:mod:`codemods.rules.fsdp401`).
"""

from __future__ import annotations

import dataclasses

from codemods.registry.names import COMPOSABLE_FSDP, TORCH_FSDP
from codemods.rules.api import Engine
from codemods.rules.fsdp401.helpers import helper_names, write_helpers
from codemods.rules.fsdp401.lookups import fresh
from codemods.rules.fsdp401.outcome import Conversion
from codemods.rules.fsdp401.setup import prepare_function
from codemods.rules.fsdp401.values import PLAIN_VALUE
from codemods.rules.layout import LINE_LENGTH, wrapped_call
from codemods.syntax.lazy_libcst import cst

#: The names the values of :class:`~codemods.rules.fsdp401.keywords.Setup`'s fields are bound to.
SETUP_NAMES = {"device": "unit_device", "init_fn": "init_fn", "sync": "sync_states"}
#: Said above the units' own mixed-precision policy (:mod:`codemods.rules.fsdp401.precision`).
ROOT_ONLY_CASTING = "# as FSDP1: the root casts the floating inputs, the units below it do not"


def bound_first(
    engine: Engine, conversion: Conversion, indent: str
) -> tuple[list[str], list[str], list[str]]:
    """The statements binding the loop's computed keyword values, and the keywords.

    FSDP1 evaluates each argument once; the loop calls ``fully_shard`` once per unit,
    so a value that is more than a name or a constant (``MixedPrecisionPolicy(...)``)
    is bound to a name first, in the arguments' order, as FSDP2 code usually shares
    one policy object: evaluated once, as before, and written once. A keyword whose
    value differs below the root (:attr:`Keywords.unit_values`) has the units' value
    bound next, after a comment saying why.

    Returns:
        The bindings (source, a comment line first where one is said), the root's
        keywords and the units' keywords.
    """
    keywords = conversion.keywords.code
    several = conversion.policy is not None or conversion.keywords.setup.needed()
    if not (conversion.classes or several):
        return [], keywords, keywords  # one call: each value is evaluated once as it is
    bindings, root, units = [], [], []
    for text in keywords:
        name, _, value = text.partition("=")
        if PLAIN_VALUE.fullmatch(value):
            root.append(text)
            var = value
        else:
            var = fresh(engine, name)
            bindings.append(f"{var} = {_laid_out(engine, value, indent, len(var) + 3)}")
            root.append(f"{name}={var}")
        unit_value = conversion.keywords.unit_values.get(name)
        if unit_value is None or not (conversion.classes or conversion.policy is not None):
            # no unit below the root: the units' value would be bound for nothing
            units.append(root[-1])
            continue
        unit_var = fresh(engine, f"unit_{name}")
        laid_out = _laid_out(engine, unit_value(var), indent, len(unit_var) + 3)
        bindings.append(f"{ROOT_ONLY_CASTING}\n{unit_var} = {laid_out}")
        units.append(f"{name}={unit_var}")
    return bindings, root, units


def _laid_out(engine: Engine, value: str, indent: str, taken: int) -> str:
    """A call's source on more lines where its line would be long (else as it is)."""
    if len(indent) + taken + len(value) <= LINE_LENGTH or "\n" in value:
        return value
    call = cst.parse_expression(value, engine.module.config_for_parsing)
    code = engine.module.code_for_node
    if isinstance(call, cst.Subscript) and isinstance(call.value, cst.Dict):
        # `{a: b, ...}[key]` (a strategy table): one entry a line, as formatters do.
        one = engine.module.default_indent
        entries = "".join(f"{one}{code(e.key)}: {code(e.value)},\n" for e in call.value.elements)
        return f"{{\n{entries}}}[{code(call.slice[0].slice)}]"
    if isinstance(call, cst.IfExp):  # `(policy(...)\n if flag\n else other)`, as formatters do
        one = engine.module.default_indent
        body = _laid_out(engine, code(call.body), indent + one, 0).replace("\n", f"\n{one}")
        orelse = _laid_out(engine, code(call.orelse), indent + one, len("else "))
        orelse = orelse.replace("\n", f"\n{one}")
        return f"(\n{one}{body}\n{one}if {code(call.test)}\n{one}else {orelse}\n)"
    if not isinstance(call, cst.Call):
        return value
    args = [code(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for arg in call.args]
    return wrapped_call(code(call.func), args, engine.module.default_indent, indent, taken)


def statements_before(
    engine: Engine, conversion: Conversion, indent: str, bindings: list[str], keywords: list[str]
) -> list[cst.CSTNode]:
    """The statements put before the call's line, in the order they run.

    The root's binding (where the call built it), ``bindings`` (:func:`bound_first`)
    and, where the call has unit classes, the loop sharding each unit with the units'
    ``keywords``.
    """
    config = engine.module.config_for_parsing
    setup = conversion.keywords.setup
    set_device = helper_names(engine, ["device"])["device"] if setup.set_device else ""
    out = write_helpers(engine, conversion.line)  # a precision's, queued by the survey
    if conversion.before:
        out.append(cst.parse_statement(f"{conversion.before}\n", config))
    for binding in conversion.keywords.bindings:  # a value read once for two keywords
        name, _, value = binding.partition(" = ")
        flat = engine.module.code_for_node(_flattened(engine, value))
        out.append(_binding(name, _laid_out(engine, flat, indent, len(name) + 3), config))
    for binding in bindings:
        out.append(cst.parse_statement(f"{binding}\n", config))
    if setup.set_device and not setup.needed():  # else after the steps bind the device
        out.append(cst.parse_statement(f"{set_device}({setup.device})\n", config))
    by_policy = conversion.policy is not None or bool(conversion.classes and setup.needed())
    if by_policy or setup.needed():
        steps = _fsdp1_steps(engine, conversion, indent, keywords, by_policy)
        return _spaced(out + steps, 1 if indent else 2)  # a nested definition after bindings
    out = _spaced(out, 1 if indent else 2)  # the helpers, then what binds values
    if conversion.classes:
        one = engine.module.default_indent
        var = fresh(engine, "submodule")
        classes = conversion.classes
        kinds = classes[0] if len(classes) == 1 else f"({', '.join(classes)})"
        root = conversion.root
        if len(indent + one * 2 + f"if isinstance({var}, {kinds}):") > LINE_LENGTH:
            # Many classes: named once before the loop, one a line, as formatters do.
            kinds = fresh(engine, "unit_classes")
            listed = "".join(f"{one}{name},\n" for name in classes)
            out.append(cst.parse_statement(f"{kinds} = (\n{listed})\n", config))
        shard = wrapped_call(
            "fully_shard", [var, *keywords], one, "", len(indent + one * 2), one * 2, False
        )
        tests = [f"isinstance({var}, {kinds})", f"{var} is not {root}"]
        loop = (
            f"for {var} in reversed(list({root}.modules())):  # descendants before ancestors\n"
            f"{one}{_condition(tests, one, one, len(indent + one))}\n"
            f"{one}{one}{shard}\n"
        )
        out.append(cst.parse_statement(loop, config))
    return out


def _flattened(engine: Engine, value: str) -> cst.BaseExpression:
    """``value`` parsed, a dict display in it on one line (laid out again after)."""
    node = cst.parse_expression(value, engine.module.config_for_parsing)
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Dict):
        entries = [
            entry.with_changes(
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                if index < len(node.value.elements) - 1
                else cst.MaybeSentinel.DEFAULT,
            )
            for index, entry in enumerate(node.value.elements)
        ]
        flat = node.value.with_changes(
            elements=entries,
            lbrace=cst.LeftCurlyBrace(),
            rbrace=cst.RightCurlyBrace(),
        )
        node = node.with_changes(value=flat)
    return node


def _condition(tests: list[str], base: str, one: str, taken: int = 0) -> str:
    """``if a and b:``, one test a line (as formatters do) where one line would be long.

    ``base`` is the indentation of the ``if`` relative to the statement being built
    (libcst adds the block's own); ``taken`` is the length of its real indentation.

    Example:
        >>> _condition(["a", "b"], "    ", "    ")
        'if a and b:'
        >>> print(_condition(["x" * 50, "y" * 50], "    ", "    "))
        if (
                xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
                and yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy
            ):
    """
    flat = f"if {' and '.join(tests)}:"
    if taken + len(flat) <= LINE_LENGTH:
        return flat
    inner = f"\n{base}{one}and ".join(tests)
    return f"if (\n{base}{one}{inner}\n{base}):"


def _fsdp1_steps(
    engine: Engine, conversion: Conversion, indent: str, keywords: list[str], by_policy: bool
) -> list[cst.CSTNode]:
    """The units decided and sharded by FSDP1's rules, each after FSDP1's own steps.

    Where the policy is known only at run time, or each unit needs FSDP1's steps
    before it is sharded (materialised, rank 0's state broadcast), in FSDP1's order.
    """
    config = engine.module.config_for_parsing
    one = engine.module.default_indent
    setup = conversion.keywords.setup
    roles = ["units"] if by_policy else []
    roles += ["materialise"] if setup.materialise else []
    roles += ["broadcast"] if setup.sync is not None else []
    roles += ["device"] if setup.set_device else []
    names = helper_names(engine, roles)
    if setup.needed():  # the helpers test for sharded units
        home = TORCH_FSDP if engine.target_at_least("2.6") else COMPOSABLE_FSDP
        engine.need_import(home, "FSDPModule")
    out = write_helpers(engine, conversion.line)
    root = conversion.root
    prepare = "None"
    if setup.needed():
        for field in ("device", "init_fn", "sync"):
            value = getattr(setup, field)
            if value and value != "True" and not PLAIN_VALUE.fullmatch(value):
                # FSDP1 evaluated each argument once: bound once here too.
                var = fresh(engine, SETUP_NAMES[field])
                out.append(_binding(var, value, config))
                setup = dataclasses.replace(setup, **{field: var})
        if setup.set_device:
            out.append(cst.parse_statement(f"{names['device']}({setup.device})\n", config))
        prepare = fresh(engine, "prepare_unit")
        mesh = next((k.partition("=")[2] for k in keywords if k.startswith("mesh=")), None)
        text = prepare_function(prepare, setup, mesh, one, names)
        out.append(cst.parse_statement(text, config))
    if by_policy:
        policy = conversion.policy
        if policy is None:  # the classes, tested as FSDP1's class policies test them
            kinds = (
                conversion.classes[0]
                if len(conversion.classes) == 1
                else (f"({', '.join(conversion.classes)})")
            )
            policy = f"lambda module, recurse, **_: recurse or isinstance(module, {kinds})"
        args = [root, policy, root, prepare, *keywords]
        text = wrapped_call(names["units"], args, one, indent, len(indent), "", False)
        out.append(cst.parse_statement(f"{text}  # FSDP1's units, children first\n", config))
    if prepare != "None":
        out.append(cst.parse_statement(f"{prepare}({root})\n", config))
    return _spaced(out, 1 if indent else 2)


def _spaced(statements: list[cst.CSTNode], lines: int = 2) -> list[cst.CSTNode]:
    """Statements with ``lines`` blank lines around each definition.

    PEP 8: two at module level, one around a nested definition (no indentation on them).
    """
    blank = [cst.EmptyLine(indent=False)] * lines
    out = []
    for index, statement in enumerate(statements):
        after_def = index and isinstance(statements[index - 1], cst.FunctionDef)
        if index and (isinstance(statement, cst.FunctionDef) or after_def):
            statement = statement.with_changes(leading_lines=blank)
        out.append(statement)
    return out


def _binding(name: str, value: str, config: cst.PartialParserConfig) -> cst.CSTNode:
    """``name = value``; a value written over several lines without brackets gets them.

    Its first line is indented as its other lines are (they keep their own indentation).
    """
    try:
        return cst.parse_statement(f"{name} = {value}\n", config)
    except cst.ParserSyntaxError:
        rest = [line for line in value.splitlines()[1:] if line.strip()]
        depth = min(len(line) - len(line.lstrip()) for line in rest)
        return cst.parse_statement(f"{name} = (\n{' ' * depth}{value}\n)\n", config)
