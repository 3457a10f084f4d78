"""The `Bank` interface is declared once (core/interface.py): these tests keep the
declaration, `Bank`, `RemoteBank` and the wire encoding in step.

A public `Bank` method that is not declared fails here, and so does a
declaration whose flags (progress, cancel, llm, property) or return type the
method contradicts, or a value that could not cross the wire.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re

import pytest

from core.bank import Bank
from core.engine import Engine
from core.interface import (
    BANK,
    BANK_INTERNALS,
    ENGINE,
    LOCAL,
    READS,
    TYPE_ALIASES,
    VALUE_TYPES,
    WRITES,
)
from core.server.client import RemoteBank, RemoteEngine

# Names an annotation may use besides the declared value types.
PLAIN = {
    "str",
    "int",
    "float",
    "bool",
    "None",
    "list",
    "dict",
    "tuple",
    "set",
    "frozenset",
    "Any",
    "Sequence",
    "Mapping",
    "Iterable",
    "datetime",
    "Path",
}
# What stays on one side: providers, callbacks and the lifecycle.
NOT_SENT = {"progress", "cancel", "llm", "self"}


def public_members(cls: type) -> set[str]:
    return {name for name in vars(cls) if not name.startswith("_")}


def names_in(annotation: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", annotation))


def test_every_public_bank_member_is_declared_and_every_declared_one_exists():
    undeclared = public_members(Bank) - set(BANK) - BANK_INTERNALS
    assert not undeclared, f"declare these Bank members in core/interface.py: {undeclared}"
    missing = set(BANK) - public_members(Bank)
    assert not missing, f"declared but not on Bank: {missing}"
    assert not public_members(Bank) & BANK_INTERNALS & set(BANK)
    assert {op.name for op in BANK.values() if op.transfer != LOCAL} == READS | WRITES
    assert not READS & WRITES


def test_each_declaration_matches_its_method():
    for name, op in BANK.items():
        member = vars(Bank)[name]
        assert isinstance(member, property) == op.attribute, name
        if op.attribute:
            returns = inspect.signature(member.fget).return_annotation
        else:
            params = inspect.signature(member).parameters
            for flag in ("progress", "cancel", "llm"):
                assert (flag in params) == getattr(op, flag), f"{name}: {flag}"
            returns = inspect.signature(member).return_annotation
        # The declared type is the method's own annotation.
        assert returns.replace(" ", "") == op.returns.replace(" ", ""), name


def test_a_write_is_declared_as_one():
    for name, op in BANK.items():
        if op.returns == "Change":
            assert op.writes, f"{name} returns a Change: it writes"


def test_every_value_that_crosses_the_wire_is_a_declared_value_type():
    """Walks each routed operation's parameters and return type, then every field
    of every value type they name: all of it must be encodable."""
    seen: set[str] = set()
    todo: list[str] = []

    def visit(annotation: str, where: str) -> None:
        for alias, meaning in TYPE_ALIASES.items():
            annotation = re.sub(rf"\b{alias}\b", meaning, annotation)
        for word in names_in(annotation) - PLAIN:
            assert word in VALUE_TYPES or word in ("ndarray",), f"{where}: {word}"
            if word in VALUE_TYPES and word not in seen:
                seen.add(word)
                todo.append(word)

    for name, op in BANK.items():
        if op.transfer == LOCAL:
            continue
        visit(op.returns, f"Bank.{name} returns")
        if not op.attribute:
            for param in inspect.signature(vars(Bank)[name]).parameters.values():
                if param.name not in NOT_SENT and param.annotation is not inspect.Parameter.empty:
                    visit(param.annotation, f"Bank.{name}({param.name})")
    while todo:
        word = todo.pop()
        module, attr = VALUE_TYPES[word].split(":")
        cls = getattr(importlib.import_module(module), attr)
        if dataclasses.is_dataclass(cls):
            for field in dataclasses.fields(cls):
                visit(str(field.type), f"{word}.{field.name}")


def test_each_value_type_is_where_the_declaration_says():
    for name, target in VALUE_TYPES.items():
        module, attr = target.split(":")
        cls = getattr(importlib.import_module(module), attr)
        assert cls.__name__ == name and cls.__module__ == module, name


def test_remote_bank_has_every_routed_operation():
    for name, op in BANK.items():
        member = getattr(RemoteBank, name, None)
        assert member is not None, f"RemoteBank lacks {name}"
        if op.attribute:
            assert isinstance(inspect.getattr_static(RemoteBank, name), property), name
        else:
            assert callable(member), name


@pytest.mark.parametrize("cls", [Engine, RemoteEngine])
def test_the_engine_operations_exist_on_both_engines(cls):
    for name in ENGINE:
        assert callable(getattr(cls, name, None)), f"{cls.__name__} lacks {name}"
