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
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from typing import Any, Literal, TypeVar, Union

T = TypeVar("T")


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


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def decode(tp: Any, data: Any) -> Any:
    """``data`` (JSON values) as an instance of type ``tp``.

    Raises:
        TypeError: ``data`` does not have the shape ``tp`` needs.
    """
    if tp is Any or tp is object:
        return data
    if tp is type(None):
        if data is not None:
            raise TypeError(f"expected null, got {type(data).__name__}")
        return None
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return _decode_union(typing.get_args(tp), data)
    if origin is Literal:
        return data
    if origin in (list, tuple, set, frozenset) or origin in _ABSTRACT_SEQUENCES:
        return _decode_sequence(tp, origin, data)
    if origin is dict or origin in _ABSTRACT_MAPPINGS:
        _, value_tp = typing.get_args(tp) or (str, Any)
        if not isinstance(data, dict):
            raise TypeError(f"expected an object, got {type(data).__name__}")
        return {k: decode(value_tp, v) for k, v in data.items()}
    if isinstance(tp, type):
        return _decode_class(tp, data)
    return data


_ABSTRACT_SEQUENCES = (typing.get_origin(typing.Sequence), typing.get_origin(typing.Iterable))
_ABSTRACT_MAPPINGS = (typing.get_origin(typing.Mapping),)


def _decode_union(options: tuple[Any, ...], data: Any) -> Any:
    if data is None and type(None) in options:
        return None
    errors = []
    for option in options:
        if option is type(None):
            continue
        try:
            return decode(option, data)
        except (TypeError, ValueError) as exc:
            errors.append(str(exc))
    raise TypeError("; ".join(errors) or "no option of the union matched")


def _decode_sequence(tp: Any, origin: Any, data: Any) -> Any:
    if not isinstance(data, list):
        raise TypeError(f"expected an array, got {type(data).__name__}")
    args = typing.get_args(tp)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(decode(args[0], v) for v in data)
        if args:
            if len(args) != len(data):
                raise TypeError(f"expected {len(args)} items, got {len(data)}")
            return tuple(decode(a, v) for a, v in zip(args, data, strict=True))
        return tuple(data)
    item_tp = args[0] if args else Any
    items = [decode(item_tp, v) for v in data]
    if origin in (set, frozenset):
        return origin(items)
    return items


def _decode_class(cls: type, data: Any) -> Any:
    if dataclasses.is_dataclass(cls):
        if not isinstance(data, dict):
            raise TypeError(f"expected an object for {cls.__name__}, got {type(data).__name__}")
        hints = _hints(cls)
        kwargs = {}
        for f in dataclasses.fields(cls):
            if f.name in data:
                kwargs[f.name] = decode(hints.get(f.name, Any), data[f.name])
        return cls(**kwargs)
    if cls is datetime:
        if isinstance(data, datetime):
            return data
        if not isinstance(data, str):
            raise TypeError(f"expected an ISO-8601 string, got {type(data).__name__}")
        return datetime.fromisoformat(data)
    if cls is float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise TypeError(f"expected a number, got {type(data).__name__}")
        return float(data)
    if cls in (str, int, bool):
        if not isinstance(data, cls) or (cls is int and isinstance(data, bool)):
            raise TypeError(f"expected {cls.__name__}, got {type(data).__name__}")
        return data
    return data


__all__ = ["decode", "encode", "orjson_default"]
