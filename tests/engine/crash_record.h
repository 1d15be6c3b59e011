// The records crash tests write: each key's vector and attributes derive from the key, so a
// reopened database can be checked without an oracle file.
#ifndef SHOAL_TESTS_ENGINE_CRASH_RECORD_H_
#define SHOAL_TESTS_ENGINE_CRASH_RECORD_H_

#include "shoal/types.h"

namespace shoal::test {

inline constexpr uint32_t kCrashDim = 16;

inline CollectionSpec CrashSpec() { return {"crash", kCrashDim, Metric::kL2}; }

inline Record CrashRecord(uint64_t key) {
  Record r;
  r.key = key;
  r.vector.resize(kCrashDim);
  for (uint32_t i = 0; i < kCrashDim; ++i) {
    r.vector[i] = static_cast<float>((key * 2654435761u + i * 40503u) % 1000) / 10.0f;
  }
  r.attributes["key"] = static_cast<int64_t>(key);
  r.tags = {"t" + std::to_string(key % 7)};
  return r;
}

}  // namespace shoal::test

#endif  // SHOAL_TESTS_ENGINE_CRASH_RECORD_H_
