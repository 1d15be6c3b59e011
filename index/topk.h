// TopK: a bounded max-heap that keeps the k best (smallest distance) candidates seen so far.
// Ties on distance are broken by the smaller id, so the result does not depend on the order in
// which candidates are offered.
//
//   shoal::index::TopK<uint64_t> top(/*k=*/10);
//   for (...) top.Push(distance, id);
//   std::vector<TopK<uint64_t>::Entry> best = top.TakeSorted();  // closest first
//
// Not thread-safe: one TopK per query per thread.
#ifndef SHOAL_INDEX_TOPK_H_
#define SHOAL_INDEX_TOPK_H_

#include <algorithm>
#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

namespace shoal::index {

template <typename Id>
class TopK {
 public:
  struct Entry {
    float distance;
    Id id;
  };

  // k = 0 keeps nothing.
  explicit TopK(size_t k) : k_(k) { heap_.reserve(k); }

  size_t k() const { return k_; }
  size_t size() const { return heap_.size(); }
  bool full() const { return heap_.size() >= k_; }

  // Distance a new candidate must not exceed to be kept: the worst kept distance once full,
  // +infinity before. (A candidate equal to it is kept only if its id is smaller.)
  float Threshold() const {
    return full() && k_ > 0 ? heap_.front().distance : std::numeric_limits<float>::infinity();
  }

  // Offers a candidate; returns true if it was kept.
  bool Push(float distance, Id id) {
    if (k_ == 0) return false;
    if (heap_.size() < k_) {
      heap_.push_back({distance, id});
      std::push_heap(heap_.begin(), heap_.end(), Less);
      return true;
    }
    if (!Less({distance, id}, heap_.front())) return false;
    std::pop_heap(heap_.begin(), heap_.end(), Less);
    heap_.back() = {distance, id};
    std::push_heap(heap_.begin(), heap_.end(), Less);
    return true;
  }

  // The kept entries, closest first (ties: smaller id first). Leaves the TopK empty.
  std::vector<Entry> TakeSorted() {
    std::sort_heap(heap_.begin(), heap_.end(), Less);
    return std::exchange(heap_, {});
  }

  // Empties it for reuse with a new k, keeping its storage (no allocation once it has held k
  // entries): a thread_local TopK reused per query allocates nothing.
  void Reset(size_t k) {
    k_ = k;
    heap_.clear();
    heap_.reserve(k);
  }

  // The kept entries, closest first (ties: smaller id first), sorted in place: valid until the
  // next Reset, which must come before any further Push.
  const std::vector<Entry>& SortInPlace() {
    std::sort_heap(heap_.begin(), heap_.end(), Less);
    return heap_;
  }

  // Orders by (distance, id): "a is closer than b".
  static bool Less(const Entry& a, const Entry& b) {
    return a.distance < b.distance || (a.distance == b.distance && a.id < b.id);
  }

 private:
  size_t k_;
  std::vector<Entry> heap_;  // max-heap under Less: front() is the worst kept
};

}  // namespace shoal::index

#endif  // SHOAL_INDEX_TOPK_H_
