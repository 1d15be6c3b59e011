// The records crash tests write: each (key, version)'s vector and attributes derive from the two
// numbers, so a reopened database can be checked against a small oracle of key -> version.
#ifndef SHOAL_TESTS_ENGINE_CRASH_RECORD_H_
#define SHOAL_TESTS_ENGINE_CRASH_RECORD_H_

#include <string>

#include "shoal/types.h"

namespace shoal::test {

inline constexpr uint32_t kCrashDim = 16;
// Index spec of the builds the crash writer runs now and then.
inline constexpr char kCrashIndexSpec[] = "spann:centroid_ratio=0.05,replicas=2";

inline CollectionSpec CrashSpec() { return {"crash", kCrashDim, Metric::kL2}; }

inline Record CrashRecord(uint64_t key, uint64_t version = 0) {
  Record r;
  r.key = key;
  r.vector.resize(kCrashDim);
  const uint64_t h = key * 2654435761u + version * 97531u;
  for (uint32_t i = 0; i < kCrashDim; ++i) {
    r.vector[i] = static_cast<float>((h + i * 40503u) % 1000) / 10.0f;
  }
  r.attributes["key"] = static_cast<int64_t>(key);
  r.attributes["version"] = static_cast<int64_t>(version);
  r.tags = {"t" + std::to_string(key % 7)};
  return r;
}

}  // namespace shoal::test

#endif  // SHOAL_TESTS_ENGINE_CRASH_RECORD_H_
