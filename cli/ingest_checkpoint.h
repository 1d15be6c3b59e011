// The resumable checkpoint of `shoal ingest`: which file goes into which collection under which
// keys, and how many leading rows the server has acknowledged. A rerun with the same checkpoint
// starts after them; since keys are derived from row numbers, rows sent again (acknowledged
// after the last save) simply overwrite themselves.
//
//   SHOAL_ASSIGN_OR_RETURN(std::optional<Checkpoint> saved, LoadCheckpoint(path));
//   AckedPrefix acked(saved ? saved->done : 0);
//   acked.Ack(first_row, count);               // from any thread, in any order
//   checkpoint.done = acked.done();
//   SHOAL_RETURN_IF_ERROR(SaveCheckpoint(path, checkpoint));
//
// The file is a few "key=value" lines; SaveCheckpoint writes a temporary file, fsyncs it and
// renames it over the old one (then fsyncs the directory), so a crash leaves the old or the new
// checkpoint, never a torn one.
#ifndef SHOAL_CLI_INGEST_CHECKPOINT_H_
#define SHOAL_CLI_INGEST_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace shoal::cli {

struct Checkpoint {
  std::string file;        // the input, as given
  std::string collection;  // the target collection
  std::string key_prefix;  // "" = numeric keys key_offset + row, else string keys prefix + row
  uint64_t key_offset = 0;
  uint64_t rows = 0;  // rows in the file (a changed file is refused)
  uint64_t done = 0;  // rows [0, done) are acknowledged

  // The first field that differs from `other` (ignoring `done`), or "" when the same ingest.
  std::string Mismatch(const Checkpoint& other) const;
};

// nullopt when `path` does not exist; DataLoss naming the path and line when it is malformed.
absl::StatusOr<std::optional<Checkpoint>> LoadCheckpoint(const std::string& path);
absl::Status SaveCheckpoint(const std::string& path, const Checkpoint& checkpoint);

// The contiguous prefix of acknowledged rows when batches complete out of order. Thread-safe.
class AckedPrefix {
 public:
  explicit AckedPrefix(uint64_t start) : done_(start) {}
  // Rows [first, first + count) are acknowledged; returns the new prefix length.
  uint64_t Ack(uint64_t first, uint64_t count);
  uint64_t done() const;

 private:
  mutable absl::Mutex mu_;
  uint64_t done_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, uint64_t> pending_ ABSL_GUARDED_BY(mu_);  // first row -> count, beyond done_
};

}  // namespace shoal::cli

#endif  // SHOAL_CLI_INGEST_CHECKPOINT_H_
