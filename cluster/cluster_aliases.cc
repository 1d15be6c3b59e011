// Aliases of sharded collections: /shoal/aliases/<alias> -> "<collection>" in etcd, written
// by whichever node takes the call (an etcd txn keeps a create from overwriting) and seen by
// every node through its view, where FindShardMap resolves them. Aliases of a node's own
// (unsharded) collections stay in its local DB; the two share one namespace per node, as
// aliases and collections do in DB.
#include <algorithm>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "cluster/cluster_db.h"

namespace shoal::cluster {

absl::Status ClusterNode::PutAlias(const std::string& alias, const std::string& collection,
                                   bool create) {
  const std::string key = kAliasesPrefix + alias;
  if (create) {
    absl::StatusOr<bool> written = etcd_.CreateIfAbsent(key, collection, /*lease=*/0);
    if (!written.ok()) return written.status();
    if (!*written) {
      return absl::AlreadyExistsError(absl::StrCat("alias: '", alias, "' already exists"));
    }
  } else {
    absl::StatusOr<RangeResult> stored = etcd_.Get(key);
    if (!stored.ok()) return stored.status();
    if (stored->kvs.empty()) return absl::NotFoundError(absl::StrCat("alias: '", alias, "'"));
    absl::StatusOr<bool> written =
        etcd_.CompareAndPut(key, collection, stored->kvs[0].mod_revision);
    if (!written.ok()) return written.status();
    if (!*written) {
      return absl::AbortedError(absl::StrCat("alias: '", alias, "' changed meanwhile; retry"));
    }
  }
  membership()->Refresh();  // this node's next call sees it
  return absl::OkStatus();
}

absl::Status ClusterNode::DeleteAlias(const std::string& alias) {
  const ClusterView view = membership()->Refresh();
  if (!view.etcd_reachable) return absl::UnavailableError("cluster: etcd is not reachable");
  if (!view.aliases.contains(alias)) {
    return absl::NotFoundError(absl::StrCat("alias: '", alias, "' not found"));
  }
  if (absl::Status s = etcd_.Delete(kAliasesPrefix + alias); !s.ok()) return s;
  membership()->Refresh();
  return absl::OkStatus();
}

namespace {

absl::Status CheckAliasName(std::string_view alias) {
  auto ok = [](char c, bool first) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
           (!first && ((c >= '0' && c <= '9') || c == '-'));
  };
  bool valid = !alias.empty() && alias.size() <= 64;
  for (size_t i = 0; valid && i < alias.size(); ++i) valid = ok(alias[i], i == 0);
  if (valid) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("alias: '", std::string(alias),
                                                 "' is not a name ([A-Za-z_][A-Za-z0-9_-]{0,63})"));
}

}  // namespace

absl::Status ClusterDB::CreateAlias(std::string_view alias, std::string_view collection) {
  if (IsSharded(alias)) {
    return absl::AlreadyExistsError(
        absl::StrCat("alias: '", std::string(alias), "' names a sharded collection or its alias"));
  }
  std::optional<ShardMap> map = node_->FindShardMap(collection);
  if (!map) return local_->CreateAlias(alias, collection);
  if (map->spec.name != collection) {
    return absl::InvalidArgumentError(absl::StrCat("collection: '", std::string(collection),
                                                   "' is an alias; name the collection"));
  }
  if (absl::Status s = CheckAliasName(alias); !s.ok()) return s;
  // The node's own names: a collection, or an alias of one.
  if (local_->DescribeCollection(alias).ok()) {
    return absl::AlreadyExistsError(
        absl::StrCat("alias: '", std::string(alias), "' names a collection on this node"));
  }
  return node_->PutAlias(std::string(alias), map->spec.name, /*create=*/true);
}

absl::Status ClusterDB::AlterAlias(std::string_view alias, std::string_view collection) {
  std::optional<ShardMap> map = node_->FindShardMap(collection);
  const bool cluster_alias = node_->View().aliases.contains(std::string(alias));
  if (!cluster_alias && !map) return local_->AlterAlias(alias, collection);
  if (!cluster_alias) {
    if (local_->DescribeCollection(alias).ok()) {
      return absl::UnimplementedError(
          absl::StrCat("alias: '", std::string(alias), "' names a collection of this node; ",
                       "pointing it at a sharded collection is not supported"));
    }
    return absl::NotFoundError(absl::StrCat("alias: '", std::string(alias), "' not found"));
  }
  if (!map) {
    return absl::UnimplementedError(absl::StrCat(
        "collection: alias '", std::string(alias), "' names a sharded collection; pointing it ",
        "at '", std::string(collection), "' (not a sharded collection) is not supported"));
  }
  if (map->spec.name != collection) {
    return absl::InvalidArgumentError(absl::StrCat("collection: '", std::string(collection),
                                                   "' is an alias; name the collection"));
  }
  return node_->PutAlias(std::string(alias), map->spec.name, /*create=*/false);
}

absl::Status ClusterDB::DropAlias(std::string_view alias) {
  if (node_->View().aliases.contains(std::string(alias))) {
    return node_->DeleteAlias(std::string(alias));
  }
  return local_->DropAlias(alias);
}

absl::StatusOr<std::vector<AliasInfo>> ClusterDB::ListAliases() {
  absl::StatusOr<std::vector<AliasInfo>> aliases = local_->ListAliases();
  if (!aliases.ok()) return aliases.status();
  for (const auto& [alias, collection] : node_->View().aliases) {
    aliases->push_back({.alias = alias, .collection = collection});
  }
  std::sort(aliases->begin(), aliases->end(),
            [](const AliasInfo& a, const AliasInfo& b) { return a.alias < b.alias; });
  return aliases;
}

}  // namespace shoal::cluster
