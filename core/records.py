"""`record`: a dataclass whose methods are shared functions, not code compiled for each class.

The standard `dataclasses.dataclass` writes `__init__`, `__repr__`, `__eq__` (and, when frozen,
`__setattr__`, `__delattr__` and `__hash__`) as source text and compiles it with `exec`, for every
class, at every start. That was a third of the CPU of Piton's own imports: about 0.5 ms a class.
A record keeps what `dataclasses` records about its fields (`dataclasses.fields`, `replace`,
`asdict` and type checkers all work as for a dataclass) and gets methods that read a per-class
table at call time instead.

What differs from a dataclass, on purpose: `__init__` takes `*args, **kwargs` (the class's
`__signature__` is not computed), and `__doc__` is left as written, or is the class's name when
none was written. Keep `@dataclass` where a caller reads the signature (the library's public options).
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T")
_MISSING = dataclasses.MISSING
_object_setattr = object.__setattr__


class _Spec:
    """What a record's shared methods need of its class, computed once when it is made."""

    __slots__ = ("compared", "defaults", "frozen", "names", "positional", "post_init", "shown")

    def __init__(self, cls: type, frozen: bool) -> None:
        fields = dataclasses.fields(cls)
        self.frozen = frozen
        self.names = frozenset(f.name for f in fields if f.init)
        self.positional = tuple(f.name for f in fields if f.init and not f.kw_only)
        # (name, default, factory, init) for each field, in the order __init__ assigns them
        self.defaults = tuple(
            (f.name, f.default, None if f.default_factory is _MISSING else f.default_factory, f.init)
            for f in fields
        )
        self.compared = tuple(f.name for f in fields if f.compare)
        self.shown = tuple(f.name for f in fields if f.repr)
        self.post_init = hasattr(cls, "__post_init__")


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    spec: _Spec = type(self).__record__
    if args:
        if len(args) > len(spec.positional) or not kwargs.keys().isdisjoint(spec.positional[: len(args)]):
            raise TypeError(f"{type(self).__qualname__}() takes {len(spec.positional)} positional arguments")
        kwargs.update(zip(spec.positional, args, strict=False))
    if not spec.names.issuperset(kwargs):
        raise TypeError(f"{type(self).__qualname__}() got unexpected arguments {set(kwargs) - spec.names}")
    put = _object_setattr if spec.frozen else setattr
    for name, default, factory, init in spec.defaults:
        if init and name in kwargs:
            put(self, name, kwargs[name])
        elif factory is not None:
            put(self, name, factory())
        elif default is not _MISSING:
            put(self, name, default)
        elif init:
            raise TypeError(f"{type(self).__qualname__}() missing required argument: {name!r}")
    if spec.post_init:
        self.__post_init__()


@reprlib.recursive_repr()
def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in type(self).__record__.shown)
    return f"{type(self).__qualname__}({shown})"


def _values(self: Any) -> tuple[Any, ...]:
    return tuple(getattr(self, name) for name in type(self).__record__.compared)


def _eq(self: Any, other: object) -> object:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _values(self) == _values(other)


def _hash(self: Any) -> int:
    return hash(_values(self))


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, f.name) for f in dataclasses.fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for f, value in zip(dataclasses.fields(self), state, strict=True):
        _object_setattr(self, f.name, value)  # frozen too: it is being made


def _explicit_hash(cls: type) -> bool:
    """As `dataclasses` decides it: a `__hash__` written in the class, not the None that writing
    `__eq__` there implies."""
    found = cls.__dict__.get("__hash__", _MISSING)
    return not (found is _MISSING or (found is None and "__eq__" in cls.__dict__))


def _make(cls: type[T], frozen: bool, eq: bool, kw_only: bool, slots: bool) -> type[T]:
    explicit_hash = _explicit_hash(cls)
    if not cls.__doc__:
        # otherwise dataclasses writes one from the signature of `object.__init__`, which `inspect`
        # parses from text: two thirds of the cost of making a record
        cls.__doc__ = cls.__name__
    made: Any = dataclasses.dataclass(init=False, repr=False, eq=False, kw_only=kw_only, slots=slots)(cls)
    spec = _Spec(made, frozen)
    methods: dict[str, Any] = {"__init__": _init, "__repr__": _repr}
    if eq:
        methods["__eq__"] = _eq
    if frozen:
        methods |= {"__setattr__": _frozen_setattr, "__delattr__": _frozen_delattr}
        if slots:
            methods |= {"__getstate__": _getstate, "__setstate__": _setstate}
    for name, method in methods.items():
        if name not in made.__dict__:
            setattr(made, name, method)
    if eq and not explicit_hash:
        made.__hash__ = _hash if frozen else None
    made.__record__ = spec
    setattr(made, "__match_args__", spec.positional)  # noqa: B010 (mypy will not let it be assigned)
    return made  # type: ignore[no-any-return]


@overload
def record(cls: type[T], /) -> type[T]: ...


@overload
def record(
    *, frozen: bool = False, eq: bool = True, kw_only: bool = False, slots: bool = True
) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def record(
    cls: type[T] | None = None,
    /,
    *,
    frozen: bool = False,
    eq: bool = True,
    kw_only: bool = False,
    slots: bool = True,
) -> type[T] | Callable[[type[T]], type[T]]:
    """Make `cls` a record: `@record`, or `@record(frozen=True)` and so on. Slotted unless
    `slots=False` (an exception class, or one that needs a `cached_property`)."""

    def wrap(cls: type[T]) -> type[T]:
        return _make(cls, frozen, eq, kw_only, slots)

    return wrap if cls is None else wrap(cls)
