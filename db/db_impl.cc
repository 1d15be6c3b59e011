#include "db/db_impl.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "cache/shard_index.h"
#include "db/snapshot.h"
#include "db/validation.h"

namespace shoal {

std::optional<Metric> ParseMetric(const std::string& name) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "l2" || n == "euclidean") return Metric::kL2;
  if (n == "ip" || n == "inner_product" || n == "dot") return Metric::kInnerProduct;
  if (n == "cosine" || n == "angular") return Metric::kCosine;
  return std::nullopt;
}

const char* MetricName(Metric metric) {
  switch (metric) {
    case Metric::kL2:
      return "l2";
    case Metric::kInnerProduct:
      return "ip";
    case Metric::kCosine:
      return "cosine";
  }
  return "unknown";
}

absl::StatusOr<std::unique_ptr<DB>> DB::Open(const std::string& path, const Options& options) {
#ifdef NDEBUG
  // absl::Mutex's deadlock detector is debug-only, but Debian's libabsl is built without NDEBUG,
  // so it runs in every build that links it: each Lock, ReaderLock and Unlock then takes one
  // process-wide spin lock (the lock-order graph) and may record a stack trace. A thread
  // preempted while holding it (the nice-19 maintenance thread, often) stalls every other
  // thread's next lock operation, searches included (docs/PERFORMANCE.md, "What searches block
  // on"). Release builds turn it off; debug and sanitizer builds keep it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
#endif
  return db::DBImpl::Open(path, options);
}

namespace db {

namespace {

CollectionInfo QuarantinedInfo(const storage::StoredCollection& meta, const absl::Status& why) {
  CollectionInfo info;
  info.spec = meta.spec;
  info.index = "unknown";
  info.damage = why.ToString();
  return info;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DB>> DBImpl::Open(const std::string& path, const Options& options,
                                                 const StorageHooks& hooks) {
  if (path.empty()) return absl::InvalidArgumentError("path: must not be empty");
  if (!(options.index_update_compact_live_fraction >= 0 &&
        options.index_update_compact_live_fraction <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.index_update_compact_live_fraction: must be in [0, 1], not ",
                     options.index_update_compact_live_fraction));
  }
  storage::FileSystem* const fs = hooks.fs != nullptr ? hooks.fs : storage::FileSystem::Default();
  SHOAL_RETURN_IF_ERROR(FinishPendingRestore(*fs, path));
  const std::string rocks_dir = absl::StrCat(path, "/rocksdb");
  const bool exists = fs->Stat(absl::StrCat(rocks_dir, "/CURRENT")).ok();
  if (exists && options.error_if_exists) {
    return absl::AlreadyExistsError(absl::StrCat("database ", path, " already exists"));
  }
  if (!exists) {
    if (!options.create_if_missing) {
      return absl::NotFoundError(absl::StrCat("no database at ", path));
    }
    if (absl::Status s = fs->CreateDirs(rocks_dir); !s.ok()) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot create ", rocks_dir, ": ", s.message()));
    }
  }
  auto db = std::unique_ptr<DBImpl>(new DBImpl(options, fs));
  db->index_root_ = absl::StrCat(path, "/index");
  db->budget_ = std::make_unique<MaintenanceBudget>(std::max(1u, options.index_update_threads),
                                                    hooks.before_maintenance_round);
  if (absl::Status s = fs->CreateDirs(db->index_root_); !s.ok()) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create ", db->index_root_, ": ", s.message()));
  }
  storage::StoreOptions store_options;
  store_options.create_if_missing = options.create_if_missing;
  store_options.block_cache_bytes = options.block_cache_bytes;
  store_options.env = hooks.rocksdb_env;
  store_options.salvage_damaged_wal = options.salvage_damaged_wal;
  SHOAL_ASSIGN_OR_RETURN(db->store_, storage::RecordStore::Open(rocks_dir, store_options));
  SHOAL_ASSIGN_OR_RETURN(std::vector<storage::StoredCollection> catalog, db->store_->LoadCatalog());
  SHOAL_ASSIGN_OR_RETURN(auto aliases, db->store_->LoadAliases());
  // The semantic caches' background index builds (process-wide: the last DB opened with a
  // nonzero build_threads sets the bound), before the catalog's loads start any.
  if (options.build_threads != 0) cache::ShardIndex::SetMaxConcurrentBuilds(options.build_threads);
  SHOAL_ASSIGN_OR_RETURN(db->caches_,
                         cache::CacheCatalog::Open(db->store_.get(), hooks.cache_clock != nullptr
                                                                         ? hooks.cache_clock
                                                                         : cache::SystemClock()));
  if (hooks.cache_sweep_seconds > 0) {
    db->caches_->StartSweeper(absl::Seconds(hooks.cache_sweep_seconds));
  }
  absl::MutexLock lock(&db->mu_);
  for (const storage::StoredCollection& meta : catalog) {
    absl::StatusOr<std::unique_ptr<Collection>> c = Collection::Load(
        db->store_.get(), meta, options, db->index_root_, db->fs_, db->budget_.get());
    if (c.ok()) {
      db->collections_.emplace(meta.spec.name, *std::move(c));
    } else {
      // One damaged collection must not keep the others from serving.
      std::cerr << "shoal: collection '" << meta.spec.name << "' is quarantined: " << c.status()
                << "\n";
      db->quarantined_.emplace(meta.spec.name, Quarantined{meta, c.status()});
    }
  }
  for (auto& [alias, collection] : aliases) db->aliases_.emplace(alias, collection);
  db->RemoveUnreferencedIndexDirs();
  return std::unique_ptr<DB>(std::move(db));
}

void DBImpl::RemoveUnreferencedIndexDirs() {
  absl::flat_hash_map<uint32_t, uint64_t> generation_of;  // collection id -> generation in use
  for (const auto& [name, c] : collections_) generation_of[c->id()] = c->IndexGeneration();
  absl::flat_hash_set<uint32_t> quarantined_ids;
  for (const auto& [name, q] : quarantined_) quarantined_ids.insert(q.meta.id);
  absl::StatusOr<std::vector<std::string>> names = fs_->ListDir(index_root_);
  if (!names.ok()) return;  // garbage stays; nothing depends on it
  for (const std::string& name : *names) {
    // c<id>.g<generation>, possibly with .tmp (a build that never finished).
    unsigned id = 0;
    unsigned long long generation = 0;
    char tail = 0;
    const int n = std::sscanf(name.c_str(), "c%u.g%llu%c", &id, &generation, &tail);
    if (n < 2) continue;  // not ours
    auto it = generation_of.find(id);
    if (n == 2 && it != generation_of.end() && it->second == generation) continue;
    if (quarantined_ids.contains(id)) continue;  // kept for the admin's inspection
    fs_->RemoveAll(absl::StrCat(index_root_, "/", name)).IgnoreError();
  }
}

DBImpl::~DBImpl() {
  absl::MutexLock lock(&mu_);
  collections_.clear();
}

absl::StatusOr<std::shared_ptr<Collection>> DBImpl::Find(std::string_view name,
                                                         std::string_view field) {
  SHOAL_RETURN_IF_ERROR(ValidateCollectionOrShardName(name, std::string(field)));
  std::string key(name);
  absl::MutexLock lock(&mu_);
  if (auto alias = aliases_.find(key); alias != aliases_.end()) key = alias->second;
  auto it = collections_.find(key);
  if (it == collections_.end()) {
    if (auto q = quarantined_.find(key); q != quarantined_.end()) {
      return absl::DataLossError(absl::StrCat(
          std::string(field), ": collection '", key, "' is quarantined: it could not be opened (",
          q->second.why.ToString(), "); DropCollection removes it, BuildIndex rebuilds its index"));
    }
    return absl::NotFoundError(
        absl::StrCat(std::string(field), ": '", std::string(name), "' not found"));
  }
  return it->second;
}

absl::Status DBImpl::DropQuarantined(const std::string& name) {
  const Quarantined& q = quarantined_.at(name);
  SHOAL_RETURN_IF_ERROR(store_->DropCollection(q.meta));
  quarantined_.erase(name);
  RemoveUnreferencedIndexDirs();  // its index directories are unreferenced now
  return absl::OkStatus();
}

// Loading reads every record of the collection: done without mu_, so that other calls go on.
// Two concurrent rebuilds may both load; the first to finish installs its copy.
absl::StatusOr<std::shared_ptr<Collection>> DBImpl::ReloadQuarantined(const std::string& name) {
  storage::StoredCollection meta;
  {
    absl::MutexLock lock(&mu_);
    auto q = quarantined_.find(name);
    if (q == quarantined_.end()) return std::shared_ptr<Collection>();  // not (any more)
    meta = q->second.meta;
  }
  SHOAL_RETURN_IF_ERROR(store_->ClearIndex(meta.id));
  absl::StatusOr<std::unique_ptr<Collection>> c =
      Collection::Load(store_.get(), meta, options_, index_root_, fs_, budget_.get());
  absl::MutexLock lock(&mu_);
  auto q = quarantined_.find(name);
  if (!c.ok()) {
    if (q != quarantined_.end()) q->second.why = c.status();
    return absl::DataLossError(absl::StrCat("collection: '", name,
                                            "' stays quarantined: without its index it still "
                                            "cannot be opened: ",
                                            c.status().ToString()));
  }
  if (q == quarantined_.end()) return std::shared_ptr<Collection>();  // another call won
  std::shared_ptr<Collection> loaded = *std::move(c);
  collections_.emplace(name, loaded);
  quarantined_.erase(q);
  RemoveUnreferencedIndexDirs();  // the damaged index's directory
  return loaded;
}

CollectionInfo DBImpl::InfoWithAliases(const Collection& c) {
  CollectionInfo info = c.Info();
  absl::MutexLock lock(&mu_);
  for (const auto& [alias, target] : aliases_) {
    if (target == info.spec.name) info.aliases.push_back(alias);
  }
  std::sort(info.aliases.begin(), info.aliases.end());
  return info;
}

absl::Status DBImpl::CreateCollection(const CollectionSpec& spec) {
  SHOAL_RETURN_IF_ERROR(ValidateSpec(spec));
  absl::ReaderMutexLock change(&change_mu_);
  absl::MutexLock lock(&mu_);
  if (collections_.contains(spec.name) || quarantined_.contains(spec.name)) {
    return absl::AlreadyExistsError(
        absl::StrCat("name: collection '", spec.name, "' already exists"));
  }
  if (aliases_.contains(spec.name)) {
    return absl::AlreadyExistsError(absl::StrCat("name: '", spec.name, "' is an alias"));
  }
  SHOAL_ASSIGN_OR_RETURN(storage::StoredCollection meta, store_->CreateCollection(spec));
  SHOAL_ASSIGN_OR_RETURN(
      std::unique_ptr<Collection> c,
      Collection::Load(store_.get(), meta, options_, index_root_, fs_, budget_.get()));
  collections_.emplace(spec.name, std::move(c));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<CollectionInfo>> DBImpl::ListCollections() {
  std::vector<std::shared_ptr<Collection>> all;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, c] : collections_) all.push_back(c);
  }
  std::vector<CollectionInfo> out;
  for (const auto& c : all) out.push_back(InfoWithAliases(*c));
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, q] : quarantined_) out.push_back(QuarantinedInfo(q.meta, q.why));
  }
  std::sort(out.begin(), out.end(), [](const CollectionInfo& a, const CollectionInfo& b) {
    return a.spec.name < b.spec.name;
  });
  return out;
}

absl::StatusOr<CollectionInfo> DBImpl::DescribeCollection(std::string_view name) {
  {
    absl::MutexLock lock(&mu_);
    if (auto q = quarantined_.find(std::string(name)); q != quarantined_.end()) {
      return QuarantinedInfo(q->second.meta, q->second.why);
    }
  }
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(name, "name"));
  return InfoWithAliases(*c);
}

bool DBImpl::HasCollection(std::string_view name) {
  std::string key(name);
  absl::MutexLock lock(&mu_);
  if (auto alias = aliases_.find(key); alias != aliases_.end()) key = alias->second;
  return collections_.contains(key) || quarantined_.contains(key);
}

absl::Status DBImpl::DropCollection(std::string_view name) {
  SHOAL_RETURN_IF_ERROR(ValidateCollectionOrShardName(name, "name"));
  const std::string key(name);
  absl::ReaderMutexLock change(&change_mu_);
  absl::MutexLock lock(&mu_);
  auto it = collections_.find(key);
  if (quarantined_.contains(key)) return DropQuarantined(key);
  if (it == collections_.end()) {
    if (auto alias = aliases_.find(key); alias != aliases_.end()) {
      return absl::NotFoundError(absl::StrCat("name: '", key, "' is an alias of '", alias->second,
                                              "'; DropCollection takes the collection's name"));
    }
    return absl::NotFoundError(absl::StrCat("name: '", key, "' not found"));
  }
  for (const auto& [alias, target] : aliases_) {
    if (target == key) {
      return absl::FailedPreconditionError(absl::StrCat(
          "name: collection '", key, "' still has alias '", alias, "'; drop the alias first"));
    }
  }
  SHOAL_RETURN_IF_ERROR(it->second->Drop());
  collections_.erase(it);
  return absl::OkStatus();
}

absl::Status DBImpl::Upsert(std::string_view collection, std::span<const Record> records,
                            const WriteOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
  absl::ReaderMutexLock change(&change_mu_);
  return c->Upsert(records, options);
}

absl::StatusOr<std::vector<std::optional<Record>>> DBImpl::Get(std::string_view collection,
                                                               std::span<const Key> keys,
                                                               const ReadOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
  return c->Get(keys, options);
}

absl::StatusOr<uint64_t> DBImpl::Delete(std::string_view collection, std::span<const Key> keys,
                                        const WriteOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
  absl::ReaderMutexLock change(&change_mu_);
  return c->Delete(keys, options);
}

absl::Status DBImpl::FlushIndexUpdates(std::string_view collection) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
  return c->FlushIndexUpdates(/*sweep_all=*/true);
}

absl::Status DBImpl::DrainIndexUpdates(std::string_view collection) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
  return c->FlushIndexUpdates(/*sweep_all=*/false);
}

absl::Status DBImpl::BuildIndex(std::string_view collection, std::string_view spec,
                                const IndexBuildProgressFn& progress) {
  absl::ReaderMutexLock change(&change_mu_);
  // A rebuild is the way back for a quarantined collection (nullptr: it is not quarantined).
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, ReloadQuarantined(std::string(collection)));
  if (c == nullptr) {
    SHOAL_ASSIGN_OR_RETURN(c, Find(collection));
  }
  return c->BuildIndex(std::string(spec), progress);
}

// ---- Aliases ----

absl::Status DBImpl::SetAlias(std::string_view alias, std::string_view collection, bool create) {
  SHOAL_RETURN_IF_ERROR(ValidateCollectionName(alias, "alias"));
  SHOAL_RETURN_IF_ERROR(ValidateCollectionName(collection, "collection"));
  const std::string name(alias);
  const std::string target(collection);
  absl::ReaderMutexLock change(&change_mu_);
  absl::MutexLock lock(&mu_);
  if (collections_.contains(name)) {
    return absl::AlreadyExistsError(absl::StrCat("alias: '", name, "' is a collection"));
  }
  const bool exists = aliases_.contains(name);
  if (create && exists) {
    return absl::AlreadyExistsError(absl::StrCat("alias: '", name, "' already exists"));
  }
  if (!create && !exists) {
    return absl::NotFoundError(absl::StrCat("alias: '", name, "' not found"));
  }
  if (!collections_.contains(target)) {
    if (aliases_.contains(target)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "collection: '", target, "' is an alias; an alias must name a collection directly"));
    }
    return absl::NotFoundError(absl::StrCat("collection: '", target, "' not found"));
  }
  SHOAL_RETURN_IF_ERROR(store_->PutAlias(name, target));
  aliases_[name] = target;
  return absl::OkStatus();
}

absl::Status DBImpl::CreateAlias(std::string_view alias, std::string_view collection) {
  return SetAlias(alias, collection, /*create=*/true);
}

absl::Status DBImpl::AlterAlias(std::string_view alias, std::string_view collection) {
  return SetAlias(alias, collection, /*create=*/false);
}

absl::Status DBImpl::DropAlias(std::string_view alias) {
  SHOAL_RETURN_IF_ERROR(ValidateCollectionName(alias, "alias"));
  const std::string name(alias);
  absl::ReaderMutexLock change(&change_mu_);
  absl::MutexLock lock(&mu_);
  if (!aliases_.contains(name)) {
    return absl::NotFoundError(absl::StrCat("alias: '", name, "' not found"));
  }
  SHOAL_RETURN_IF_ERROR(store_->PutAlias(name, ""));
  aliases_.erase(name);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<AliasInfo>> DBImpl::ListAliases() {
  std::vector<AliasInfo> out;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [alias, target] : aliases_) out.push_back({alias, target});
  }
  std::sort(out.begin(), out.end(),
            [](const AliasInfo& a, const AliasInfo& b) { return a.alias < b.alias; });
  return out;
}

// ---- Maintenance ----

absl::Status DBImpl::SyncWrites() { return store_->SyncWal(); }

absl::Status DBImpl::Compact(std::string_view collection) {
  std::optional<uint32_t> id;
  if (!collection.empty()) {
    SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
    SHOAL_ASSIGN_OR_RETURN(std::vector<storage::StoredCollection> catalog, store_->LoadCatalog());
    for (const storage::StoredCollection& meta : catalog) {
      if (meta.spec.name == c->spec().name) id = meta.id;
    }
    if (!id.has_value()) {
      return absl::NotFoundError(
          absl::StrCat("collection: '", std::string(collection), "' not found"));
    }
  }
  absl::ReaderMutexLock change(&change_mu_);
  return store_->Compact(id);
}

absl::StatusOr<std::vector<std::vector<Hit>>> DBImpl::Search(std::string_view collection,
                                                             std::span<const float> queries,
                                                             const SearchParams& params) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<Collection> c, Find(collection));
  return c->Search(queries, params);
}

}  // namespace db
}  // namespace shoal
