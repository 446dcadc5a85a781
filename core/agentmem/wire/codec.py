"""JSON on the wire: agentmem's result dataclasses to JSON values and back.

Encoding is generic: a dataclass becomes an object of its fields, a tuple or any other
iterable a list, a ``datetime`` an ISO-8601 string. Decoding is driven by the type a value
must become (a return annotation of the API, e.g. ``RecallResult`` or
``list[MemoryItem]``): dataclasses are rebuilt field by field from their type hints, so a
client gets back the same types the embedded API returns.

Example:
    >>> from agentmem.models import RememberResult
    >>> decode(RememberResult, encode(RememberResult(id="a1", was_new=True)))
    RememberResult(id='a1', was_new=True)
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from datetime import date, datetime
from typing import Any, Literal, Union


def encode(value: Any) -> Any:
    """``value`` as JSON-ready data (dicts, lists, strings, numbers, booleans, None)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, bytes | bytearray):
        raise TypeError("bytes cannot be sent as JSON; decode them to str first")
    if isinstance(value, Iterable):
        return [encode(v) for v in value]
    raise TypeError(f"cannot encode a {type(value).__name__} as JSON")


def orjson_default(value: Any) -> Any:
    """``default=`` for ``orjson.dumps``: the values orjson does not encode natively."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, set | frozenset) or (
        isinstance(value, Iterable) and not isinstance(value, str | bytes)
    ):
        return list(value)
    raise TypeError(f"cannot encode a {type(value).__name__} as JSON")


def decode(tp: Any, data: Any) -> Any:
    """``data`` (JSON values) as an instance of type ``tp``.

    The decoder of each type is built once from its type hints and cached.

    Raises:
        TypeError: ``data`` does not have the shape ``tp`` needs.
    """
    return decoder(tp)(data)


Decoder = Callable[[Any], Any]


@functools.cache
def decoder(tp: Any) -> Decoder:
    """The function that turns JSON values into an instance of ``tp``."""
    if tp is Any or tp is object:
        return _same
    if tp is type(None):
        return _none
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (Union, types.UnionType):
        return _union(args)
    if origin is Literal:
        return _same
    if origin is tuple:
        return _tuple(args)
    if origin in (list, set, frozenset) or origin in _ABSTRACT_SEQUENCES:
        return _sequence(list if origin in _ABSTRACT_SEQUENCES else origin, args)
    if origin is dict or origin in _ABSTRACT_MAPPINGS:
        return _mapping(args[1] if len(args) == 2 else Any)
    if isinstance(tp, type):
        if dataclasses.is_dataclass(tp):
            return _dataclass(tp)
        if tp is datetime:
            return _datetime
        if tp is float:
            return _float
        if tp in (str, int, bool):
            return _exact(tp)
    return _same


_ABSTRACT_SEQUENCES = (
    typing.get_origin(typing.Sequence),
    typing.get_origin(typing.Iterable),
    typing.get_origin(typing.Collection),
)
_ABSTRACT_MAPPINGS = (typing.get_origin(typing.Mapping),)


def _same(data: Any) -> Any:
    return data


def _none(data: Any) -> None:
    if data is not None:
        raise TypeError(f"expected null, got {type(data).__name__}")


def _union(options: tuple[Any, ...]) -> Decoder:
    nullable = type(None) in options
    decoders = [decoder(o) for o in options if o is not type(None)]

    def run(data: Any) -> Any:
        if data is None and nullable:
            return None
        errors = []
        for fn in decoders:
            try:
                return fn(data)
            except (TypeError, ValueError) as exc:
                errors.append(str(exc))
        raise TypeError("; ".join(errors) or "no option of the union matched")

    return run


def _array(data: Any) -> list[Any]:
    if not isinstance(data, list):
        raise TypeError(f"expected an array, got {type(data).__name__}")
    return data


def _tuple(args: tuple[Any, ...]) -> Decoder:
    if len(args) == 2 and args[1] is Ellipsis:
        item = decoder(args[0])
        return lambda data: tuple(item(v) for v in _array(data))
    if not args:
        return lambda data: tuple(_array(data))
    items = [decoder(a) for a in args]

    def run(data: Any) -> tuple[Any, ...]:
        values = _array(data)
        if len(values) != len(items):
            raise TypeError(f"expected {len(items)} items, got {len(values)}")
        return tuple(fn(v) for fn, v in zip(items, values, strict=True))

    return run


def _sequence(kind: Any, args: tuple[Any, ...]) -> Decoder:
    item = decoder(args[0]) if args else _same
    if item is _same:
        return lambda data: kind(_array(data))
    return lambda data: kind([item(v) for v in _array(data)])


def _mapping(value_tp: Any) -> Decoder:
    value = decoder(value_tp)

    def run(data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise TypeError(f"expected an object, got {type(data).__name__}")
        return data if value is _same else {k: value(v) for k, v in data.items()}

    return run


def _dataclass(cls: type) -> Decoder:
    hints = typing.get_type_hints(cls)
    fields = [(f.name, decoder(hints.get(f.name, Any))) for f in dataclasses.fields(cls)]

    def run(data: Any) -> Any:
        if not isinstance(data, dict):
            raise TypeError(f"expected an object for {cls.__name__}, got {type(data).__name__}")
        return cls(**{name: fn(data[name]) for name, fn in fields if name in data})

    return run


def _datetime(data: Any) -> datetime:
    if isinstance(data, datetime):
        return data
    if not isinstance(data, str):
        raise TypeError(f"expected an ISO-8601 string, got {type(data).__name__}")
    return datetime.fromisoformat(data)


def _float(data: Any) -> float:
    if isinstance(data, bool) or not isinstance(data, int | float):
        raise TypeError(f"expected a number, got {type(data).__name__}")
    return float(data)


def _exact(cls: type) -> Decoder:
    def run(data: Any) -> Any:
        if type(data) is not cls:
            raise TypeError(f"expected {cls.__name__}, got {type(data).__name__}")
        return data

    return run


__all__ = ["decode", "decoder", "encode", "orjson_default"]
