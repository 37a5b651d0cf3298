"""Small, metadata-free helpers over libcst nodes that the engine and the fixes share."""

from __future__ import annotations

import functools

from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any


def dotted(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a name or attribute chain, else None.

    Example:
        >>> dotted(cst.parse_expression("torch.distributed.fsdp"))
        'torch.distributed.fsdp'
        >>> dotted(cst.parse_expression("f()")) is None
        True
    """
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def alias_assignments(module: cst.Module) -> list[tuple[cst.Name, cst.BaseExpression]]:
    """``(target, value)`` of each module-level ``name = a.b.c`` (one plain target).

    The ``ast`` half is :func:`codemods.syntax.ast_nodes.alias_assignment`.
    """
    found = []
    for line in module.body:
        for small in line.body if isinstance(line, cst.SimpleStatementLine) else ():
            if not isinstance(small, cst.Assign) or len(small.targets) != 1:
                continue
            target = small.targets[0].target
            if isinstance(target, cst.Name) and dotted(small.value) is not None:
                found.append((target, small.value))
    return found


def subclass_aliases(module: cst.Module) -> list[tuple[cst.ClassDef, cst.BaseExpression]]:
    """``(class, base)`` of each module-level class that keeps its one base's constructor.

    The ``ast`` half (and the rule) is :func:`codemods.syntax.ast_nodes.subclass_alias`.
    """
    from codemods.syntax.ast_nodes import CONSTRUCTORS

    found = []
    for node in module.body:
        if not isinstance(node, cst.ClassDef) or node.decorators or node.keywords:
            continue
        if len(node.bases) != 1 or node.bases[0].star or dotted(node.bases[0].value) is None:
            continue
        body = node.body.body
        defined = [s.name.value for s in body if isinstance(s, cst.FunctionDef)]
        small = [
            x
            for s in body
            for x in (s.body if isinstance(s, cst.SimpleStatementLine) else (s,))
            if isinstance(x, (cst.Assign, cst.AnnAssign))
        ]
        for statement in small:
            targets = (
                [t.target for t in statement.targets]
                if isinstance(statement, cst.Assign)
                else [statement.target]
            )
            defined += [dotted(t) for t in targets]
        if not CONSTRUCTORS.intersection(defined):
            found.append((node, node.bases[0].value))
    return found


def literal(node: cst.BaseExpression) -> Any:
    """The value of an integer, string or ``True``/``False``/``None`` literal, else None.

    Example:
        >>> literal(cst.parse_expression("'bf16'")), literal(cst.parse_expression("16"))
        ('bf16', 16)
    """
    if isinstance(node, cst.Integer):
        return int(node.value)
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    return None


def is_bool(node: cst.BaseExpression) -> bool:
    """Whether ``node`` is the literal ``True`` or ``False``."""
    return isinstance(node, cst.Name) and node.value in ("True", "False")


def keyword(arg: cst.Arg) -> str | None:
    """The keyword of ``arg`` (None for positional and ``*``/``**`` arguments)."""
    return arg.keyword.value if arg.keyword is not None else None


def is_plain_positional(arg: cst.Arg) -> bool:
    """A positional argument that is not ``*args`` or ``**kwargs``."""
    return arg.keyword is None and arg.star == ""


def string_like(original: cst.BaseExpression, value: str) -> cst.SimpleString:
    """A string literal for ``value`` quoted the way ``original`` was (double by default)."""
    quote = "'" if isinstance(original, cst.SimpleString) and original.quote == "'" else '"'
    return cst.SimpleString(f"{quote}{value}{quote}")


def keyword_arg(template: cst.Arg, name: str, value: cst.BaseExpression) -> cst.Arg:
    """``template`` (its layout and comments kept) as ``name=value``."""
    return template.with_changes(
        keyword=cst.Name(name),
        value=value,
        equal=template.equal
        if isinstance(template.equal, cst.AssignEqual)
        else cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
    )


def take_ending(kept: cst.Arg, dropped: cst.Arg) -> cst.Arg:
    """``kept``, now last, ending the way the dropped last argument did.

    Its own trailing comment stays; the line break and indentation before ``)`` come
    from ``dropped``.
    """
    comma, tail = kept.comma, dropped.comma
    if not isinstance(tail, cst.Comma):
        comma = cst.MaybeSentinel.DEFAULT
    elif isinstance(comma, cst.Comma) and isinstance(
        comma.whitespace_after, cst.ParenthesizedWhitespace
    ):
        if isinstance(tail.whitespace_after, cst.ParenthesizedWhitespace):
            last_line = tail.whitespace_after.last_line
            comma = comma.with_changes(
                whitespace_after=comma.whitespace_after.with_changes(last_line=last_line)
            )
    return kept.with_changes(comma=comma, whitespace_after_arg=dropped.whitespace_after_arg)


def keep_ending(args: list[cst.Arg], original: list[cst.Arg]) -> list[cst.Arg]:
    """``args`` (what is left of ``original``) closing the call the way ``original`` did.

    Where the last original argument was dropped or replaced, the new last one takes its
    ending, so no stray comma or lost line break is left before ``)``.
    """
    if args and original and args[-1] is not original[-1]:
        args = [*args[:-1], take_ending(args[-1], original[-1])]
    return args


@functools.cache
def _collector() -> type:
    """The visitor of :func:`find_all`, defined on first use (subclassing reads libcst)."""
    from codemods.syntax.cst_dispatch import CachedVisit

    class Collect(CachedVisit):
        def __init__(self, keep: Any) -> None:
            self.keep = keep
            self.found: list[cst.CSTNode] = []

        def on_visit(self, node: cst.CSTNode) -> bool:
            if self.keep(node):
                self.found.append(node)
            return True

    return Collect


def find_all(tree: cst.CSTNode, keep: Any) -> list[cst.CSTNode]:
    r"""Every node of ``tree`` for which ``keep(node)`` is true, in source order.

    Example:
        >>> tree = cst.parse_module("f(a=1)\ng(a=2)\n")
        >>> len(find_all(tree, lambda n: isinstance(n, cst.Call)))
        2
    """
    collector = _collector()(keep)
    tree.visit(collector)
    return collector.found


def append_arg(call: cst.Call, args: list[cst.Arg], new: cst.Arg) -> list[cst.Arg]:
    """``args`` (of ``call``) with ``new`` added last, laid out like the arguments before it.

    ``new`` takes over the old last argument's ending (a trailing comma, the line break
    before ``)``); the old last argument is then separated the way earlier arguments
    are (a comma and a space, or a line break and the same indentation), keeping its
    own trailing comment.

    Example:
        >>> call = cst.parse_expression("f(block)")
        >>> extra = cst.Arg(cst.Name("y"), keyword=cst.Name("x"), equal=no_space_equal())
        >>> new_args = append_arg(call, list(call.args), extra)
        >>> cst.Module([]).code_for_node(call.with_changes(args=new_args))
        'f(block, x=y)'
    """
    if not args:
        return [new]
    last = args[-1]
    separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        # Arguments start on their own line: the new one goes on a line of its own too.
        separator = cst.Comma(whitespace_after=call.whitespace_before_args)
    if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma):
        separator = args[-2].comma
    if isinstance(separator.whitespace_after, cst.ParenthesizedWhitespace):
        # The separator's line keeps the old last argument's own comment, and only that.
        own = last.comma.whitespace_after if isinstance(last.comma, cst.Comma) else None
        first_line = (
            own.first_line
            if isinstance(own, cst.ParenthesizedWhitespace)
            else cst.TrailingWhitespace()
        )
        separator = separator.with_changes(
            whitespace_after=separator.whitespace_after.with_changes(first_line=first_line)
        )
    ending = last.comma if isinstance(last.comma, cst.Comma) else cst.MaybeSentinel.DEFAULT
    if isinstance(ending, cst.Comma) and isinstance(
        ending.whitespace_after, cst.ParenthesizedWhitespace
    ):
        ending = ending.with_changes(
            whitespace_after=ending.whitespace_after.with_changes(
                first_line=cst.TrailingWhitespace()
            )
        )
    return [
        *args[:-1],
        last.with_changes(comma=separator, whitespace_after_arg=cst.SimpleWhitespace("")),
        new.with_changes(comma=ending, whitespace_after_arg=last.whitespace_after_arg),
    ]


@functools.cache
def no_space_equal() -> cst.AssignEqual:
    """``=`` as keyword arguments are written (PEP 8: no spaces)."""
    return cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
    )


def new_keyword(name: str, value: cst.BaseExpression | str) -> cst.Arg:
    """A fresh ``name=value`` argument; ``value`` may be source text."""
    if isinstance(value, str):
        value = cst.parse_expression(value)
    return cst.Arg(value=value, keyword=cst.Name(name), equal=no_space_equal())
