"""Search filters over record attributes and tags, built as shoal.v1.Filter messages.

    from shoal import filters as f
    client.search("docs", q, k=10,
                  filter=f.all_of(f.eq("lang", "en"), f.range("year", lo=2020), f.has_tag("x")))
"""

from shoal.v1 import types_pb2


def attribute_value(value):
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


def eq(name, value):
    return types_pb2.Filter(equals=types_pb2.AttributeEquals(name=name, value=attribute_value(value)))


def range(name, lo=None, hi=None):  # noqa: A001 (mirrors the wire name)
    r = types_pb2.AttributeRange(name=name)
    if lo is not None:
        r.lo = float(lo)
    if hi is not None:
        r.hi = float(hi)
    return types_pb2.Filter(range=r)


def has_tag(tag):
    return types_pb2.Filter(has_tag=tag)


def all_of(*operands):
    return types_pb2.Filter(all_of=types_pb2.FilterList(filters=list(operands)))


def any_of(*operands):
    return types_pb2.Filter(any_of=types_pb2.FilterList(filters=list(operands)))


def negate(operand):
    return types_pb2.Filter(negate=operand)
