"""Search filters over record attributes and tags, built as shoal.v1.Filter messages.

    from shoal import filters as f
    client.search("docs", q, k=10,
                  filter=f.all_of(f.eq("lang", "en"), f.range("year", lo=2020), f.has_tag("x")))
"""

from __future__ import annotations

from typing import Optional, Union

from shoal.v1 import types_pb2


def attribute_value(value: Union[bool, int, float, str]) -> types_pb2.AttributeValue:
    """A Python value -> shoal.v1.AttributeValue (bool, int, float or str)."""
    v = types_pb2.AttributeValue()
    if isinstance(value, bool):
        v.bool_value = value
    elif isinstance(value, int):
        v.int_value = value
    elif isinstance(value, float):
        v.double_value = value
    elif isinstance(value, str):
        v.string_value = value
    else:
        raise TypeError(f"attribute value {value!r}: want bool, int, float or str")
    return v


def eq(name: str, value: Union[bool, int, float, str]) -> types_pb2.Filter:
    """Records whose attribute `name` equals `value`."""
    return types_pb2.Filter(equals=types_pb2.AttributeEquals(name=name, value=attribute_value(value)))


def range(name: str, lo: Optional[float] = None,  # noqa: A001 (mirrors the wire name)
          hi: Optional[float] = None) -> types_pb2.Filter:
    """Records whose numeric attribute `name` lies in [lo, hi] (an open end when None)."""
    r = types_pb2.AttributeRange(name=name)
    if lo is not None:
        r.lo = float(lo)
    if hi is not None:
        r.hi = float(hi)
    return types_pb2.Filter(range=r)


def has_tag(tag: str) -> types_pb2.Filter:
    """Records carrying `tag`."""
    return types_pb2.Filter(has_tag=tag)


def all_of(*operands: types_pb2.Filter) -> types_pb2.Filter:
    """Records every operand matches (AND)."""
    return types_pb2.Filter(all_of=types_pb2.FilterList(filters=list(operands)))


def any_of(*operands: types_pb2.Filter) -> types_pb2.Filter:
    """Records some operand matches (OR)."""
    return types_pb2.Filter(any_of=types_pb2.FilterList(filters=list(operands)))


def negate(operand: types_pb2.Filter) -> types_pb2.Filter:
    """Records the operand does not match (NOT)."""
    return types_pb2.Filter(negate=operand)
