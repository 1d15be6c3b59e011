// ProgressBar: one self-rewriting line on stderr for long operations (`shoal ingest`):
//   [##########..........]  30000/60000 rows  50%  21.3k rows/s  ETA 1s
// Disabled (prints nothing) when stderr is not a terminal. The rate counts only rows done in
// this run (a resumed ingest starts with `start` rows already done). Thread-safe.
#ifndef SHOAL_CLI_PROGRESS_H_
#define SHOAL_CLI_PROGRESS_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace shoal::cli {

class ProgressBar {
 public:
  ProgressBar(uint64_t total, uint64_t start, bool enabled);
  // Redraws at most every 100 ms.
  void Update(uint64_t done);
  // Final redraw and a newline.
  void Finish(uint64_t done);

  // The line for `done` rows after `elapsed` (exposed for tests).
  static std::string Line(uint64_t total, uint64_t start, uint64_t done, absl::Duration elapsed);

 private:
  void Draw(uint64_t done) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const uint64_t total_;
  const uint64_t start_;
  const bool enabled_;
  const absl::Time began_ = absl::Now();
  absl::Mutex mu_;
  absl::Time last_draw_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace shoal::cli

#endif  // SHOAL_CLI_PROGRESS_H_
