"""Semantic caches (CacheService): the cache calls of shoal.Client, and their value types.

    with shoal.Client("127.0.0.1:50051") as client:
        client.create_cache("answers", dimension=384)
        client.set_cache_policy("answers", shoal.CachePolicy(threshold=0.92, ttl_seconds=3600),
                                category="code")
        hit = client.cache_lookup("answers", embedding, prompt=text, category="code",
                                  tenant="acme", model="llama-3-8b")
        if not hit.hit:
            answer = call_model(text)
            client.cache_store("answers", embedding, answer, prompt=text, category="code",
                               tenant="acme", model="llama-3-8b")

Thresholds are SIMILARITIES in [0, 1]: higher = more alike; a lookup hits when
similarity >= threshold, so raising a threshold makes the cache stricter. A lookup never sees
another partition's entries (tenant, model, params_fingerprint, context_hash). A miss still
reports the nearest similarity and the threshold used.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, NamedTuple, Optional, Union

import numpy as np
import numpy.typing as npt

from shoal.v1 import cache_service_pb2 as cache_pb2
from shoal.v1 import types_pb2

_EVICTIONS = {"lru": cache_pb2.CACHE_EVICTION_LRU, "lfu": cache_pb2.CACHE_EVICTION_LFU,
              "fifo": cache_pb2.CACHE_EVICTION_FIFO}
_METRICS = {"l2": types_pb2.METRIC_L2, "ip": types_pb2.METRIC_INNER_PRODUCT,
            "cosine": types_pb2.METRIC_COSINE}


class CachePolicy(NamedTuple):
    """One category's policy (see shoal/cache.h). None = the server's default for that field
    (min_threshold: threshold, max_ttl_seconds: ttl_seconds, max_threshold: 1)."""
    enabled: bool = True
    threshold: float = 0.9
    ttl_seconds: int = 0
    refresh_ttl_on_hit: bool = False
    max_entries: int = 0
    max_bytes: int = 0
    eviction: str = "lru"  # "lru", "lfu" or "fifo"
    min_threshold: Optional[float] = None
    max_ttl_seconds: Optional[int] = None
    load_high: float = 0.8
    target_false_hit_rate: float = 0.02
    max_threshold: Optional[float] = None


class CacheInfo(NamedTuple):
    """A cache as list_caches reports it."""
    name: str
    dimension: int
    metric: str
    entries: int
    bytes: int
    categories: List[str]
    # Why the cache could not be loaded at open (it serves nothing until dropped); "" = serves.
    quarantine: str = ""
    index_builds: int = 0  # shards whose clustered index is being rebuilt in the background
    # Background index builds that failed since open, and the last one's message ("" if none).
    index_build_failures: int = 0
    index_build_error: str = ""


class CacheLookupResult(NamedTuple):
    """A lookup's answer. similarity is NaN when the partition and category hold no entry."""
    hit: bool
    exact: bool
    entry_id: int
    response: bytes
    similarity: float
    threshold: float
    age_seconds: float
    disabled: bool


def policy_to_proto(policy: CachePolicy) -> cache_pb2.CachePolicy:
    """The wire form of a policy (ValueError for an unknown eviction)."""
    if policy.eviction not in _EVICTIONS:
        raise ValueError(f"eviction: {policy.eviction!r} is not lru, lfu or fifo")
    out = cache_pb2.CachePolicy(
        enabled=policy.enabled, threshold=policy.threshold, ttl_seconds=policy.ttl_seconds,
        refresh_ttl_on_hit=policy.refresh_ttl_on_hit, max_entries=policy.max_entries,
        max_bytes=policy.max_bytes, eviction=_EVICTIONS[policy.eviction],
        load_high=policy.load_high, target_false_hit_rate=policy.target_false_hit_rate)
    if policy.min_threshold is not None:
        out.min_threshold = policy.min_threshold
    if policy.max_ttl_seconds is not None:
        out.max_ttl_seconds = policy.max_ttl_seconds
    if policy.max_threshold is not None:
        out.max_threshold = policy.max_threshold
    return out


def policy_from_proto(p: cache_pb2.CachePolicy) -> CachePolicy:
    """A policy from its wire form."""
    names = {v: k for k, v in _EVICTIONS.items()}
    return CachePolicy(
        enabled=p.enabled, threshold=p.threshold, ttl_seconds=p.ttl_seconds,
        refresh_ttl_on_hit=p.refresh_ttl_on_hit, max_entries=p.max_entries,
        max_bytes=p.max_bytes, eviction=names.get(p.eviction, "lru"),
        min_threshold=p.min_threshold if p.HasField("min_threshold") else None,
        max_ttl_seconds=p.max_ttl_seconds if p.HasField("max_ttl_seconds") else None,
        load_high=p.load_high, target_false_hit_rate=p.target_false_hit_rate,
        max_threshold=p.max_threshold if p.HasField("max_threshold") else None)


def _counters(c: cache_pb2.CacheCounters) -> Dict[str, int]:
    return {f.name: getattr(c, f.name) for f in c.DESCRIPTOR.fields}


class CacheMethods:
    """The CacheService calls of shoal.Client (a mixin: it uses the client's channel)."""

    _caches: Any

    def _call(self, method: Any, request: Any, timeout: Optional[float] = None) -> Any:
        raise NotImplementedError  # shoal.Client provides it

    def create_cache(self, name: str, dimension: int, metric: str = "cosine") -> None:
        """Creates an empty cache of `dimension`-float embeddings ("cosine", "ip" or "l2")."""
        if metric not in _METRICS:
            raise ValueError(f"metric: {metric!r} is not cosine, ip or l2")
        spec = cache_pb2.CacheSpec(name=name, dimension=dimension, metric=_METRICS[metric])
        self._call(self._caches.CreateCache, cache_pb2.CreateCacheRequest(spec=spec))

    def drop_cache(self, name: str) -> None:
        """Removes the cache and every entry."""
        self._call(self._caches.DropCache, cache_pb2.DropCacheRequest(cache=name))

    def list_caches(self) -> List[CacheInfo]:
        """Every cache, by name."""
        names = {v: k for k, v in _METRICS.items()}
        response = self._call(self._caches.ListCaches, cache_pb2.ListCachesRequest())
        return [CacheInfo(c.spec.name, c.spec.dimension, names.get(c.spec.metric, "cosine"),
                          c.entries, c.bytes, list(c.categories), c.quarantine, c.index_builds,
                          c.index_build_failures, c.index_build_error)
                for c in response.caches]

    def set_cache_policy(self, cache: str, policy: CachePolicy, category: str = "") -> None:
        """Sets `category`'s policy ("" = the default for categories without their own)."""
        self._call(self._caches.SetCachePolicy, cache_pb2.SetCachePolicyRequest(
            cache=cache, category=category, policy=policy_to_proto(policy)))

    def get_cache_policy(self, cache: str, category: str = "") -> CachePolicy:
        """The category's policy (the default one when it has none)."""
        response = self._call(self._caches.GetCachePolicy,
                              cache_pb2.GetCachePolicyRequest(cache=cache, category=category))
        return policy_from_proto(response.policy)

    @staticmethod
    def _lookup_request(cache: str, embedding: npt.ArrayLike, prompt: Optional[str],
                        prompt_hash: Optional[str], category: str, tenant: str, model: str,
                        params_fingerprint: str,
                        context_hash: str) -> cache_pb2.CacheLookupRequest:
        vector = np.asarray(embedding, dtype=np.float32).reshape(-1)
        return cache_pb2.CacheLookupRequest(
            cache=cache, category=category, embedding=vector.tolist(), prompt=prompt or "",
            prompt_hash=prompt_hash or "",
            partition=cache_pb2.CachePartition(tenant=tenant, model=model,
                                               params_fingerprint=params_fingerprint,
                                               context_hash=context_hash))

    def cache_lookup(self, cache: str, embedding: npt.ArrayLike, *, prompt: Optional[str] = None,
                     prompt_hash: Optional[str] = None, category: str = "", tenant: str = "",
                     model: str = "", params_fingerprint: str = "",
                     context_hash: str = "") -> CacheLookupResult:
        """Exact match on the prompt first, then the nearest entry of the same partition
        (tenant, model, params_fingerprint, context_hash) and category."""
        r = self._call(self._caches.Lookup, self._lookup_request(
            cache, embedding, prompt, prompt_hash, category, tenant, model, params_fingerprint,
            context_hash))
        return CacheLookupResult(r.hit, r.exact, r.entry_id, r.response, r.similarity,
                                 r.threshold, r.age_seconds, r.disabled)

    def cache_store(self, cache: str, embedding: npt.ArrayLike, response: Union[bytes, str], *,
                    prompt: Optional[str] = None, prompt_hash: Optional[str] = None,
                    category: str = "", tenant: str = "", model: str = "",
                    params_fingerprint: str = "", context_hash: str = "",
                    sync: bool = False) -> int:
        """Stores a response; returns the entry id (0 when the category is disabled)."""
        data = response.encode() if isinstance(response, str) else bytes(response)
        request = cache_pb2.CacheStoreRequest(
            lookup=self._lookup_request(cache, embedding, prompt, prompt_hash, category, tenant,
                                        model, params_fingerprint, context_hash),
            response=data, sync=sync)
        return self._call(self._caches.Store, request).entry_id

    def cache_invalidate(self, cache: str, *, category: str = "", tenant: str = "",
                         older_than_seconds: float = 0, dry_run: bool = True) -> int:
        """Removes the matching entries (dry_run, the default: only counts them)."""
        request = cache_pb2.CacheInvalidateRequest(
            cache=cache, category=category, tenant=tenant,
            older_than_seconds=older_than_seconds, dry_run=dry_run)
        return self._call(self._caches.Invalidate, request).count

    def cache_feedback(self, cache: str, entry_id: int, correct: bool,
                       similarity: Optional[float] = None) -> None:
        """Reports whether a hit was right (wrong ones tighten thresholds)."""
        request = cache_pb2.CacheFeedbackRequest(
            cache=cache, entry_id=entry_id,
            verdict=cache_pb2.CACHE_VERDICT_CORRECT if correct else cache_pb2.CACHE_VERDICT_WRONG)
        if similarity is not None and not math.isnan(similarity):
            request.similarity = similarity
        self._call(self._caches.Feedback, request)

    def cache_stats(self, cache: str) -> Dict[str, Any]:
        """Counters in total, per category and per partition, and lookup latency."""
        r = self._call(self._caches.GetCacheStats, cache_pb2.GetCacheStatsRequest(cache=cache))
        return {
            "total": _counters(r.total),
            "categories": {c.category: dict(_counters(c.counters),
                                            threshold_offset=c.threshold_offset,
                                            band_share=c.band_share,
                                            learned_ttl_seconds=c.learned_ttl_seconds)
                           for c in r.categories},
            "partitions": [dict(tenant=p.partition.tenant, model=p.partition.model,
                                params_fingerprint=p.partition.params_fingerprint,
                                context_hash=p.partition.context_hash, **_counters(p.counters))
                           for p in r.partitions],
            "lookup_p50_us": r.lookup_p50_us,
            "lookup_p99_us": r.lookup_p99_us,
        }

    def report_model_load(self, model: str, load: float) -> None:
        """The model's current load in [0, 1] (for the load-adaptive band)."""
        self._call(self._caches.ReportModelLoad,
                   cache_pb2.ReportModelLoadRequest(model=model, load=load))
