"""A record behaves as the dataclass of the same shape: each test builds both and compares."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections.abc import Callable
from typing import Any

import pytest

from piton.core.records import record

SHAPES = [
    {"frozen": False, "eq": True, "kw_only": False, "slots": True},
    {"frozen": True, "eq": True, "kw_only": False, "slots": True},
    {"frozen": False, "eq": False, "kw_only": False, "slots": True},
    {"frozen": False, "eq": True, "kw_only": True, "slots": True},
    {"frozen": True, "eq": True, "kw_only": False, "slots": False},
    {"frozen": False, "eq": True, "kw_only": False, "slots": False},
]


def _body() -> dict[str, Any]:
    """A class body with every kind of field: required, default, factory, not shown, not compared,
    not taken by __init__."""
    return {
        "__annotations__": {"a": "int", "b": "str", "c": "list[int]", "d": "int", "e": "int", "f": "int"},
        "b": "x",
        "c": dataclasses.field(default_factory=list),
        "d": dataclasses.field(default=4, repr=False),
        "e": dataclasses.field(default=5, compare=False),
        "f": dataclasses.field(default=6, init=False),
        "__module__": __name__,
    }


def both(shape: dict[str, bool], body: Callable[[], dict[str, Any]] = _body) -> tuple[type, type]:
    """The record and the dataclass of `shape`, built from the same class body, with one name."""
    made: type = record(**shape)(type("Thing", (), body()))
    standard: type = dataclasses.dataclass(**shape)(type("Thing", (), body()))
    return made, standard


def _outcome(make: Callable[[], Any]) -> Any:
    try:
        return make()
    except TypeError:
        return TypeError


@pytest.mark.parametrize("shape", SHAPES)
def test_construction_fields_and_repr_are_the_dataclass_s(shape: dict[str, bool]) -> None:
    made, standard = both(shape)
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((), {"a": 1}),
        ((), {"a": 1, "b": "y", "c": [2], "d": 7, "e": 8}),
        ((1,), {}),
        ((1, "y"), {"e": 2}),
        ((1, "y", [3], 4, 5), {}),
        ((1, "y", [3], 4, 5, 6), {}),  # too many
        ((), {}),  # a required one missing
        ((1,), {"a": 2}),  # given twice
        ((), {"a": 1, "z": 2}),  # unknown
        ((), {"a": 1, "f": 2}),  # not an __init__ field
    ]
    for args, kwargs in calls:
        ours = _outcome(lambda: made(*args, **kwargs))  # noqa: B023 (called at once)
        theirs = _outcome(lambda: standard(*args, **kwargs))  # noqa: B023
        if theirs is TypeError or ours is TypeError:
            assert ours is theirs, (shape, args, kwargs)
            continue
        assert repr(ours) == repr(theirs)
        assert dataclasses.asdict(ours) == dataclasses.asdict(theirs)
        assert [f.name for f in dataclasses.fields(ours)] == [f.name for f in dataclasses.fields(theirs)]
        assert getattr(made, "__match_args__") == getattr(standard, "__match_args__")  # noqa: B009


@pytest.mark.parametrize("shape", SHAPES)
def test_equality_hashing_and_freezing_are_the_dataclass_s(shape: dict[str, bool]) -> None:
    made, standard = both(shape)
    for cls in (made, standard):
        one, same, other, unseen = cls(a=1, c=()), cls(a=1, c=()), cls(a=2, c=()), cls(a=1, c=(), e=9)
        assert (one == same, one == other, one == unseen, one != same) == (
            (True, False, True, False) if shape["eq"] else (False, False, False, True)
        )
        assert (cls.__hash__ is None) == (shape["eq"] and not shape["frozen"])
    if shape["eq"] and shape["frozen"]:
        assert hash(made(a=1, c=())) == hash(standard(a=1, c=()))
    for cls in (made, standard):
        thing = cls(a=1)
        if shape["frozen"]:
            with pytest.raises(dataclasses.FrozenInstanceError):
                thing.a = 2
            with pytest.raises(dataclasses.FrozenInstanceError):
                del thing.a
        else:
            thing.a = 2
            assert thing.a == 2
    assert made(a=1) != standard(a=1)  # never equal across classes


@pytest.mark.parametrize("shape", SHAPES)
def test_replace_copy_and_pickle_keep_every_field(shape: dict[str, bool]) -> None:
    made, _ = both(shape)
    globals()["Thing"] = made  # pickle finds a class by its module and name
    try:
        thing = made(a=1, b="y", c=[2])
        for again in (copy.copy(thing), copy.deepcopy(thing), pickle.loads(pickle.dumps(thing))):
            assert dataclasses.asdict(again) == dataclasses.asdict(thing)
        changed = dataclasses.replace(thing, b="z")
        assert (changed.a, changed.b, changed.c) == (1, "z", [2])
    finally:
        del globals()["Thing"]


def test_post_init_runs_and_what_the_class_writes_itself_is_kept() -> None:
    @record
    class Counted:
        n: int
        seen: list[int] = dataclasses.field(default_factory=list)

        def __post_init__(self) -> None:
            self.seen.append(self.n)

        def __repr__(self) -> str:
            return "counted"

    assert (Counted(3).seen, repr(Counted(3))) == ([3], "counted")

    @record(frozen=True)
    class Keyed:
        name: str

        def __hash__(self) -> int:
            return 7

    assert hash(Keyed("a")) == 7


def test_a_subclass_takes_its_parent_s_fields_first() -> None:
    @record
    class Base:
        a: int

    @record
    class Child(Base):
        b: int = 2

    assert (repr(Child(1)), Child.__match_args__) == (
        "test_a_subclass_takes_its_parent_s_fields_first.<locals>.Child(a=1, b=2)",
        ("a", "b"),
    )


def test_a_recursive_record_is_shown_without_recursing() -> None:
    @record(eq=False)
    class Node:
        next: Any = None

    node = Node()
    node.next = node
    assert repr(node).endswith("Node(next=...)")


def test_slots_are_kept() -> None:
    @record
    class Slotted:
        a: int

    with pytest.raises(AttributeError):
        Slotted(1).b = 2  # type: ignore[attr-defined]


def test_a_docstring_is_kept_and_a_missing_one_is_the_class_s_name() -> None:
    @record
    class Written:
        """What it is."""

        a: int

    @record(frozen=True, slots=False)
    class Unwritten:
        a: int

    assert Written.__doc__ == "What it is."
    assert Unwritten.__doc__ == "Unwritten"  # not a signature parsed at every start, as dataclasses makes
