// Per-thread reuse of a short-lived object's scratch vector: the object takes over the vector the
// last one on its thread gave back, instead of allocating its own (a query's few-KiB arrays are
// past the allocator's per-thread cache, and one query makes one such object after another).
//
//   thread_local std::vector<uint32_t> spare;
//   Scope::Scope() { base::TakeSpare(spare, leaves_); ... }   // leaves_ empty, spare's capacity
//   Scope::~Scope() { base::GiveBackSpare(leaves_, spare); }
#ifndef SHOAL_BASE_SPARE_VECTOR_H_
#define SHOAL_BASE_SPARE_VECTOR_H_

#include <cstddef>
#include <vector>

namespace shoal::base {

// Largest vector kept per spare: more would hold a thread's memory after one large query.
inline constexpr size_t kMaxSpareBytes = 64 << 10;

// `v` becomes the spare's buffer, emptied; the spare keeps v's old one.
template <typename T>
void TakeSpare(std::vector<T>& spare, std::vector<T>& v) {
  v.swap(spare);
  v.clear();
}

// Keeps v's buffer as the spare when it is larger than the spare's and at most kMaxSpareBytes.
template <typename T>
void GiveBackSpare(std::vector<T>& v, std::vector<T>& spare) {
  if (v.capacity() > spare.capacity() && v.capacity() * sizeof(T) <= kMaxSpareBytes) v.swap(spare);
}

}  // namespace shoal::base

#endif  // SHOAL_BASE_SPARE_VECTOR_H_
