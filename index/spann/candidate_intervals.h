// CandidateIntervals: one quantized query's candidates in SpannIndex's search (spann_index.cc), an
// interval [lower, upper] of the distance per id, and the running bound that drops codes before
// any bookkeeping. Internal to index/spann/; one instance per query (thread_local), not
// thread-safe.
#ifndef SHOAL_INDEX_SPANN_CANDIDATE_INTERVALS_H_
#define SHOAL_INDEX_SPANN_CANDIDATE_INTERVALS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace shoal::index {

// One query's candidate slot per id: a small open-addressing table (linear probing) whose
// entries count only when stamped with the current query's epoch, so resetting is O(1). A query
// has hundreds of candidates, so the table stays in L1 (an id-indexed array over all ids did
// not: a cache miss per candidate).
class CandidateSlots {
 public:
  static constexpr uint32_t kNone = ~0u;
  void Reset() {
    used_ = 0;
    if (++epoch_ == 0) {  // wrapped: forget every stamp
      for (Entry& e : table_) e.epoch = 0;
      epoch_ = 1;
    }
  }
  uint32_t& Find(uint64_t id) {
    if (2 * (used_ + 1) > table_.size()) Grow();
    const size_t mask = table_.size() - 1;
    for (size_t at = Home(id, mask);; at = (at + 1) & mask) {
      Entry& e = table_[at];
      if (e.epoch != epoch_) {
        e = {id, kNone, epoch_};
        ++used_;
        return e.slot;
      }
      if (e.id == id) return e.slot;
    }
  }

 private:
  struct Entry {
    uint64_t id = 0;
    uint32_t slot = kNone;
    uint32_t epoch = 0;
  };
  static size_t Home(uint64_t id, size_t mask) {
    return static_cast<size_t>((id * 0x9E3779B97F4A7C15ull) >> 40) & mask;
  }
  void Grow() {
    std::vector<Entry> old;
    old.swap(table_);
    table_.assign(std::max<size_t>(1024, old.size() * 2), Entry{});
    const uint32_t epoch = epoch_;
    used_ = 0;
    for (const Entry& e : old) {
      if (e.epoch == epoch) Find(e.id) = e.slot;
    }
  }

  uint32_t epoch_ = 1;
  size_t used_ = 0;
  std::vector<Entry> table_;
};

// One quantized query's candidates: an interval [lower, upper] of the distance per id (replicas
// intersect theirs), or its exact distance (OfferExact: a member scored on its full vector,
// which later intervals of its replicas do not change). The k-th smallest upper bound among the
// distinct candidates so far (each counted with the first interval it got) bounds the true k-th
// distance from above: a code whose lower bound lies beyond running() cannot be in the top-k.
class CandidateIntervals {
 public:
  void Reset(size_t k) {
    k_ = k;
    cands_.clear();
    slots_.Reset();
    uppers_.clear();
    running_ = std::numeric_limits<float>::infinity();
  }
  float running() const { return running_; }
  void Offer(uint64_t id, float lo, float hi) {
    uint32_t& slot = slots_.Find(id);
    if (slot != CandidateSlots::kNone) {
      Candidate& c = cands_[slot];
      if (c.exact) return;
      c.lower = std::max(c.lower, lo);
      c.upper = std::min(c.upper, hi);
      return;
    }
    slot = static_cast<uint32_t>(cands_.size());
    cands_.push_back({id, lo, hi, false});
    CountUpper(hi);
  }
  void OfferExact(uint64_t id, float distance) {
    uint32_t& slot = slots_.Find(id);
    if (slot != CandidateSlots::kNone) {
      cands_[slot] = {id, distance, distance, true};
      return;
    }
    slot = static_cast<uint32_t>(cands_.size());
    cands_.push_back({id, distance, distance, true});
    CountUpper(distance);
  }
  // The same bound over the final (replica-tightened) intervals: the ids whose lower bound
  // reaches below it, the only ones that can be in the top-k, as (lower bound, id) ascending;
  // those known exactly go to *exact (distance, id) instead, when it is given.
  void Survivors(std::vector<std::pair<float, uint64_t>>* out,
                 std::vector<std::pair<float, uint64_t>>* exact = nullptr) {
    float bound = std::numeric_limits<float>::infinity();
    if (k_ > 0 && cands_.size() >= k_) {
      uppers_.clear();
      for (const Candidate& c : cands_) uppers_.push_back(c.upper);
      std::nth_element(uppers_.begin(), uppers_.begin() + (k_ - 1), uppers_.end());
      bound = uppers_[k_ - 1];
    }
    out->clear();
    if (exact != nullptr) exact->clear();
    for (const Candidate& c : cands_) {
      if (c.lower > bound) continue;
      (c.exact && exact != nullptr ? exact : out)->emplace_back(c.lower, c.id);
    }
    std::sort(out->begin(), out->end());
  }

 private:
  struct Candidate {
    uint64_t id;
    float lower, upper;
    bool exact;
  };
  void CountUpper(float hi) {
    if (k_ > 0 && (uppers_.size() < k_ || hi < uppers_.front())) {
      if (uppers_.size() == k_) {
        std::pop_heap(uppers_.begin(), uppers_.end());
        uppers_.pop_back();
      }
      uppers_.push_back(hi);
      std::push_heap(uppers_.begin(), uppers_.end());
      if (uppers_.size() == k_) running_ = uppers_.front();
    }
  }

  size_t k_ = 0;
  std::vector<Candidate> cands_;
  CandidateSlots slots_;
  std::vector<float> uppers_;  // max-heap of at most k upper bounds
  float running_ = std::numeric_limits<float>::infinity();
};

}  // namespace shoal::index

#endif  // SHOAL_INDEX_SPANN_CANDIDATE_INTERVALS_H_
