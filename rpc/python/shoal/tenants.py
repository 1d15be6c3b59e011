"""Tenants inside a collection (TenantService): the calls Client inherits from TenantCalls.

    client.create_tenant("docs", "acme", max_vectors=100_000)
    client.upsert("docs", keys=[1, 2], vectors=v, tenant="acme")   # acme owns 1 and 2
    client.grant("docs", "beta", keys=[1])                         # beta sees 1 too
    ids, distances = client.search("docs", q, k=10, tenant="beta")
    for info in client.list_tenants("docs"):                       # every page
        print(info.name, info.vectors_owned)

With an API key bound to a tenant (key-file "ROLE KEY NAME tenant=T") the server pins every
call to that tenant: leave `tenant` empty (or name T); naming another tenant raises
PermissionDeniedError, as do create/drop/quotas/state/grant/revoke/key_tenants. Only admin
keys may name any tenant.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, List, NamedTuple, Union

import numpy as np

from shoal.v1 import tenant_service_pb2 as tenant_pb2
from shoal.v1 import types_pb2

Key = Union[int, str]
"""A record key: an int >= 0 (uint64 on the wire) or a str."""

_STATES = {"active": tenant_pb2.TENANT_STATE_ACTIVE,
           "inactive": tenant_pb2.TENANT_STATE_INACTIVE,
           "offloaded": tenant_pb2.TENANT_STATE_OFFLOADED}
_STATE_NAMES = {v: k for k, v in _STATES.items()}


class TenantQuotas(NamedTuple):
    """A tenant's limits; 0 = unlimited."""
    max_vectors: int = 0
    max_bytes: int = 0
    max_searches_per_second: float = 0.0


class TenantInfo(NamedTuple):
    """A tenant as describe_tenant / list_tenants report it (latencies in microseconds)."""
    name: str
    state: str  # "active", "inactive" or "offloaded"
    quotas: TenantQuotas
    vectors_owned: int
    vectors_visible: int
    bytes_owned: int
    searches: int
    search_p50_us: float
    search_p99_us: float
    buckets_scanned: int


class TenantPage(NamedTuple):
    """One page of list_tenants_page; next_page_token "" = the last page."""
    tenants: List[TenantInfo]
    next_page_token: str


def state_of(name: str) -> int:
    """A state name (active, inactive, offloaded) -> shoal.v1.TenantState."""
    try:
        return _STATES[name]
    except KeyError:
        raise ValueError(f"state {name!r}: want one of active, inactive, offloaded") from None


def tenant_info(info: tenant_pb2.TenantInfo) -> TenantInfo:
    """shoal.v1.TenantInfo -> TenantInfo."""
    q = info.quotas
    return TenantInfo(info.name, _STATE_NAMES.get(info.state, "unspecified"),
                      TenantQuotas(q.max_vectors, q.max_bytes, q.max_searches_per_second),
                      info.vectors_owned, info.vectors_visible, info.bytes_owned, info.searches,
                      info.search_p50_us, info.search_p99_us, info.buckets_scanned)


def _key(key: Key) -> types_pb2.Key:
    if isinstance(key, str):
        return types_pb2.Key(name=key)
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool) and key >= 0:
        return types_pb2.Key(id=int(key))
    raise TypeError(f"key {key!r}: want an int >= 0 or a str")


class TenantCalls:
    """The TenantService calls of Client (needs Client's _call and _tenants stub)."""

    _tenants: Any

    def _call(self, method: Any, request: Any, timeout: Any = None) -> Any:
        raise NotImplementedError  # Client's

    def create_tenant(self, collection: str, tenant: str, max_vectors: int = 0,
                      max_bytes: int = 0, max_searches_per_second: float = 0.0) -> TenantInfo:
        """Creates a tenant in `collection` with its quotas (0 = unlimited); returns it.
        Needs an admin key."""
        quotas = tenant_pb2.TenantQuotas(max_vectors=max_vectors, max_bytes=max_bytes,
                                         max_searches_per_second=max_searches_per_second)
        request = tenant_pb2.CreateTenantRequest(collection=collection, tenant=tenant,
                                                 quotas=quotas)
        return tenant_info(self._call(self._tenants.CreateTenant, request).tenant)

    def drop_tenant(self, collection: str, tenant: str, sync: bool = False) -> int:
        """Removes a tenant, its grants and the records it owns (for every tenant); returns
        how many records were deleted. Needs an admin key."""
        request = tenant_pb2.DropTenantRequest(collection=collection, tenant=tenant, sync=sync)
        return self._call(self._tenants.DropTenant, request).deleted

    def list_tenants_page(self, collection: str, page_size: int = 0,
                          page_token: str = "") -> TenantPage:
        """One page of tenants ordered by name (page_size 0 = 100, at most 10000)."""
        request = tenant_pb2.ListTenantsRequest(collection=collection, page_size=page_size,
                                                page_token=page_token)
        response = self._call(self._tenants.ListTenants, request)
        return TenantPage([tenant_info(t) for t in response.tenants], response.next_page_token)

    def list_tenants(self, collection: str, page_size: int = 0) -> Iterator[TenantInfo]:
        """Every tenant of `collection` by name, fetched page by page as it is iterated."""
        token = ""
        while True:
            page = self.list_tenants_page(collection, page_size, token)
            yield from page.tenants
            token = page.next_page_token
            if not token:
                return

    def describe_tenant(self, collection: str, tenant: str = "") -> TenantInfo:
        """One tenant ("" = the API key's own tenant, for a tenant-bound key)."""
        request = tenant_pb2.DescribeTenantRequest(collection=collection, tenant=tenant)
        return tenant_info(self._call(self._tenants.DescribeTenant, request).tenant)

    def set_tenant_quotas(self, collection: str, tenant: str, max_vectors: int = 0,
                          max_bytes: int = 0, max_searches_per_second: float = 0.0) -> None:
        """Replaces every quota of a tenant (0 = unlimited). Needs an admin key."""
        quotas = tenant_pb2.TenantQuotas(max_vectors=max_vectors, max_bytes=max_bytes,
                                         max_searches_per_second=max_searches_per_second)
        self._call(self._tenants.SetTenantQuotas,
                   tenant_pb2.SetTenantQuotasRequest(collection=collection, tenant=tenant,
                                                     quotas=quotas))

    def set_tenant_state(self, collection: str, tenant: str, state: str) -> None:
        """Loads ("active") or unloads ("inactive", "offloaded") a tenant's index structures.
        Needs an admin key."""
        self._call(self._tenants.SetTenantState,
                   tenant_pb2.SetTenantStateRequest(collection=collection, tenant=tenant,
                                                    state=state_of(state)))

    def grant(self, collection: str, tenant: str, keys: Iterable[Key], sync: bool = False) -> int:
        """Makes existing records visible to `tenant` without copying them (all or nothing);
        returns how many keys were given."""
        request = tenant_pb2.GrantRequest(collection=collection, tenant=tenant, sync=sync,
                                          keys=[_key(k) for k in keys])
        return self._call(self._tenants.Grant, request).keys

    def revoke(self, collection: str, tenant: str, keys: Iterable[Key], sync: bool = False) -> int:
        """Hides records from `tenant` again (not from their owner); returns how many keys."""
        request = tenant_pb2.RevokeRequest(collection=collection, tenant=tenant, sync=sync,
                                           keys=[_key(k) for k in keys])
        return self._call(self._tenants.Revoke, request).keys

    def key_tenants(self, collection: str, key: Key) -> List[str]:
        """The tenants that see one record: its owner first, then the grantees by name."""
        request = tenant_pb2.ListKeyTenantsRequest(collection=collection, key=_key(key))
        return list(self._call(self._tenants.ListKeyTenants, request).tenants)

    def count_by_tenant(self, collection: str, tenant: str = "", owned_only: bool = False) -> int:
        """Records `tenant` owns (owned_only) or sees ("" = the key's own tenant)."""
        request = tenant_pb2.CountByTenantRequest(collection=collection, tenant=tenant,
                                                  owned_only=owned_only)
        return self._call(self._tenants.CountByTenant, request).count

    def delete_by_tenant(self, collection: str, tenant: str = "", sync: bool = False) -> int:
        """Deletes every record `tenant` owns (for every tenant); returns how many."""
        request = tenant_pb2.DeleteByTenantRequest(collection=collection, tenant=tenant,
                                                   sync=sync)
        return self._call(self._tenants.DeleteByTenant, request).deleted
