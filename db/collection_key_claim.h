// Collection::KeyClaim, shared by the files that implement Collection's writes
// (collection.cc, collection_tenant_admin.cc). Private to db/.
#ifndef SHOAL_DB_COLLECTION_KEY_CLAIM_H_
#define SHOAL_DB_COLLECTION_KEY_CLAIM_H_

#include <utility>
#include <vector>

#include "db/collection.h"

namespace shoal::db {

// Claims the keys of one write: waits (holding nothing) until no write in flight holds any of
// them, then holds write_mu_ until Unlock(). The keys stay claimed until destruction, after the
// write is applied.
class Collection::KeyClaim {
 public:
  KeyClaim(Collection* c, std::vector<Key> keys) ABSL_NO_THREAD_SAFETY_ANALYSIS
      : c_(c),
        keys_(std::move(keys)) {
    auto free = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      for (const Key& k : keys_) {
        if (c_->in_flight_.contains(k)) return false;
      }
      return true;
    };
    c_->write_mu_.LockWhen(absl::Condition(&free));
    c_->in_flight_.insert(keys_.begin(), keys_.end());
  }
  void Unlock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    c_->write_mu_.Unlock();
    locked_ = false;
  }
  ~KeyClaim() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (!locked_) c_->write_mu_.Lock();
    for (const Key& k : keys_) c_->in_flight_.erase(k);
    c_->write_mu_.Unlock();
  }

 private:
  Collection* const c_;
  const std::vector<Key> keys_;
  bool locked_ = true;
};

}  // namespace shoal::db

#endif  // SHOAL_DB_COLLECTION_KEY_CLAIM_H_
