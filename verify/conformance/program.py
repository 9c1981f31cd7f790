"""Edits of an mhlo_ir Module for the conformance run, and the transformation they make.

mhlo_ir's IR has no use-lists and no editing API beyond building (on purpose: see
mhlo_ir/ir.py), so the few edits the run needs are small functions here: a new argument for a
function, replacing every use of a value, removing an operation, inserting one before another,
renaming a function. Each keeps the invariants ``Module.verify`` checks (block arguments
numbered in order, ``Function.arg_types`` matching the entry block, the symbol table matching
the functions' names).

``transform`` is the conformance transformation on our AST: ``@main``'s ``call @inputs()``
results become arguments of ``@main`` (the values of ``@inputs``' constants, read from their
DenseElementsAttrs, are what is passed), and the ``check`` ops are removed, ``@main`` returning
each checked value and its expected value instead (of what it returned: the quantized tests
return ``check.eq``'s own verdict).
"""

from __future__ import annotations

from typing import Iterator, NamedTuple

from mhlo_ir import ir
from mhlo_ir.dense import DenseElementsAttr
from mhlo_ir.ir import BlockArgument, Function, Module, Operation, make_operation
from mhlo_ir.op_attributes import OpAttributes
from mhlo_ir.ops.spec import REGISTRY

from .checks import check_of
from .outcome import Unsupported

__all__ = ["add_argument", "replace_uses", "remove_op", "insert_before", "rename_function",
           "walk", "uses", "entry_function", "check_kind", "transform", "Transformed"]


def walk(fn: Function) -> Iterator[Operation]:
    """Every operation of ``fn``, nested regions included (outer ops first)."""
    return (op for _, op in ir.walk(fn))


def uses(fn: Function, value) -> list:
    """The operations of ``fn`` that use ``value`` (compared by identity)."""
    return [op for op in walk(fn) if any(v is value for v in op.operands)]


def add_argument(fn: Function, type_) -> BlockArgument:
    """Append an argument of ``type_`` to ``fn`` (its type, its entry block and, if it has
    them, its argument attributes) and return it."""
    block = fn.entry_block
    arg = BlockArgument(type_, block, len(block.arguments))
    block.arguments = block.arguments + (arg,)
    fn.arg_types = fn.arg_types + (type_,)
    if fn.arg_attrs is not None:
        fn.arg_attrs.append({})
    return arg


def replace_uses(fn: Function, old, new) -> int:
    """Make every operand of ``fn`` that is ``old`` (by identity) ``new``; returns how many."""
    n = 0
    for op in walk(fn):
        operands = op.operands
        if any(v is old for v in operands):
            n += sum(1 for v in operands if v is old)
            op.operands = tuple(new if v is old else v for v in operands)
    return n


def remove_op(op: Operation) -> None:
    """Take ``op`` out of its block (its results must have no uses left)."""
    ops = op.parent.operations
    for i, o in enumerate(ops):
        if o is op:
            del ops[i]
            return
    raise ValueError(f"{op!r} is not in its parent block")


def insert_before(anchor: Operation, op: Operation) -> Operation:
    """Put ``op`` into ``anchor``'s block just before ``anchor``."""
    block = anchor.parent
    ops = block.operations
    for i, o in enumerate(ops):
        if o is anchor:
            ops.insert(i, op)
            op.parent = block
            return op
    raise ValueError(f"{anchor!r} is not in its parent block")


def rename_function(module: Module, fn: Function, name: str) -> None:
    """Rename ``fn`` to ``name`` in ``module``'s symbol table (which must not hold it)."""
    if module.lookup(name) is not None:
        raise ValueError(f"the module already has a function @{name}")
    fn.name = name  # (the module's symbol table follows a rename)


def entry_function(module: Module) -> Function | None:
    """``@main``, or the only function of a module with one (the quantized tests name
    theirs after the case)."""
    main = module.lookup("main")
    if main is None and len(module.functions) == 1:
        main = module.functions[0]
    return main


def check_kind(op: Operation) -> str | None:
    """The check ``op`` asserts (``expect_close``...), or None for other ops."""
    name = op.spec.name
    if name == "custom_call":
        target = op.attr("call_target_name")
        target = getattr(target, "value", None)
        if isinstance(target, str) and target.startswith("check."):
            return target[len("check."):]
        return None
    if name.startswith("check."):
        return name[len("check."):]
    return None


def _callee(op: Operation) -> str | None:
    if op.spec.name != "func.call":
        return None
    return getattr(op.attr("callee"), "name", None)


class Transformed(NamedTuple):
    """The transformed module, the arguments for its ``@main`` and its checks
    (``checks.Check``s, ``@main`` returning actual and expected for each in turn)."""
    module: Module
    arguments: list
    checks: list


def _constant_values(fn: Function) -> list:
    """What ``fn`` returns, when it returns only constants it defines, as numpy arrays."""
    ops = fn.entry_block.operations
    ret = ops[-1]
    out = []
    for v in ret.operands:
        owner = getattr(v, "owner", None)
        value = owner.attr("value") if owner is not None and owner.spec.name == "constant" \
            else None
        if not isinstance(value, DenseElementsAttr):
            raise Unsupported(f"@{fn.name} returns a value that is not a constant it defines "
                              "(its values cannot be read without running it)")
        out.append(value.to_array())
    return out


def transform(module: Module) -> Transformed:
    """The conformance transformation, in place (see the module docstring). Raises
    Unsupported for modules without checks or with checks it cannot judge."""
    main = entry_function(module)
    if main is None:
        raise Unsupported("no @main (and more than one function) to run")
    block = main.entry_block
    # @inputs first: the values a check uses are then the new arguments, not the call's.
    arguments = []
    for op in list(block.operations):
        if _callee(op) != "inputs":
            continue
        inputs = module.lookup("inputs")
        if inputs is None:
            raise Unsupported("@main calls @inputs, which the module does not define")
        values = _constant_values(inputs)
        for r, value in zip(op.results, values):
            replace_uses(main, r, add_argument(main, r.type))
            arguments.append(value)
        remove_op(op)
    checks, returned = [], []
    for op in list(block.operations):
        kind = check_kind(op)
        if kind is None:
            continue
        try:
            check = check_of(kind, op.spec.name != "custom_call",
                             lambda name: getattr(op.attr(name), "value", None))
        except ValueError as e:
            raise Unsupported(str(e)) from None
        if kind.endswith("_const"):
            value = op.attr("value")
            if not isinstance(value, DenseElementsAttr) or len(op.operands) != 1:
                raise Unsupported(f"check.{kind} without one operand and a dense value")
            expected = insert_before(op, make_operation(
                REGISTRY["constant"], (), (value.type,), OpAttributes({"value": value}),
                location=op.location, parent=block))
            actual = op.operands[0]
        else:
            if len(op.operands) != 2:
                raise Unsupported(f"check.{kind} with {len(op.operands)} operands")
            actual, expected = op.operands
        for r in op.results:
            # main's return is replaced below by the checked values; any other use of a
            # check's verdict would compute with it
            if any(user is not block.operations[-1] for user in uses(main, r)):
                raise Unsupported(f"the result of check.{kind} is used")
        checks.append(check)
        returned += [actual, expected]
        remove_op(op)
    if not checks:
        raise Unsupported("no check ops: nothing to judge")
    ret = block.operations[-1]
    ret.operands = tuple(returned)
    main.result_types = tuple(v.type for v in returned)
    main.res_attrs = None
    if main.name != "main":
        rename_function(module, main, "main")
    main.visibility = None
    return Transformed(module, arguments, checks)
