"""Search filters over record attributes and tags (the library's shoal/filter.h).

    from shoal_embedded import filters as f
    db.search("docs", q, k=10,
              filter=f.all_of(f.eq("lang", "en"), f.range("year", lo=2020), f.not_(f.has_tag("x"))))

The same names as the gRPC SDK's shoal.filters. A filter is checked when a search uses it: a bad
one (an empty all_of, a NaN bound, lo > hi, ...) raises InvalidArgumentError naming the node,
e.g. "filter.and[1].range.lo". Attribute names or tags no record has match nothing.
"""

from typing import Optional, Union

from shoal_embedded import _core
from shoal_embedded._core import Filter

__all__ = ["Filter", "all_of", "any_of", "eq", "has_tag", "not_", "range"]


def eq(name: str, value: Union[bool, int, float, str]) -> Filter:
    """Records whose attribute `name` equals `value` (3 matches 3 and 3.0; bool and str only
    their own type)."""
    return _core._filter_eq(name, value)


def range(name: str, lo: Optional[float] = None,  # noqa: A001 (mirrors shoal.filters)
          hi: Optional[float] = None) -> Filter:
    """Records whose numeric attribute `name` lies in [lo, hi] (an open end when None)."""
    return _core._filter_range(name, lo, hi)


def has_tag(tag: str) -> Filter:
    """Records carrying `tag`."""
    return _core._filter_has_tag(tag)


def all_of(*operands: Filter) -> Filter:
    """Records every operand matches (AND; at least one operand)."""
    return _core._filter_all_of(list(operands))


def any_of(*operands: Filter) -> Filter:
    """Records some operand matches (OR; at least one operand)."""
    return _core._filter_any_of(list(operands))


def not_(operand: Filter) -> Filter:
    """Live records `operand` does not match."""
    return _core._filter_not(operand)
