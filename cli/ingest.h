// `shoal ingest`: loads a vector file into a collection over gRPC.
//
//   shoal ingest train-images-idx3-ubyte.gz --collection fmnist --create --metric l2 \
//       --batch 1000 --streams 2 --checkpoint fmnist.ckpt
//
// One reader thread turns rows into batches (checking every value is finite: a bad value is an
// InvalidArgument naming the file and record); `streams` sender threads each keep one
// streaming Ingest RPC with up to `window` batches in flight (or send plain Upserts, --rpc
// upsert), waiting out the server's back-off answers. Row r gets key `key_offset + r` (or the
// string `key_prefix + r`), so re-sending a row overwrites it with itself: the ingest is
// idempotent. The checkpoint records the contiguous prefix of acknowledged rows (atomically
// replaced, at most every 200 ms and at the end); a rerun with the same checkpoint continues after
// it. A progress bar (rows/s, ETA) goes to stderr when it is a terminal.
#ifndef SHOAL_CLI_INGEST_H_
#define SHOAL_CLI_INGEST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/args.h"
#include "cli/connection.h"

namespace shoal::cli {

struct IngestOptions {
  std::string file;
  std::string collection;
  std::string format = "auto";
  // Create the collection when missing (dimension = the file's, or `dimension` which must
  // agree with it).
  bool create = false;
  uint32_t dimension = 0;
  std::string metric = "l2";
  size_t batch = 1000;
  int streams = 2;
  bool sync = false;       // fsync each batch before it is acknowledged
  std::string tenant;      // the tenant that owns the records ("" = none, or the key's own)
  std::string checkpoint;  // "" = none
  bool restart = false;    // ignore (and overwrite) a checkpoint of a different ingest
  std::string key_prefix;  // "" = numeric keys
  uint64_t key_offset = 0;
  uint64_t limit = UINT64_MAX;  // ingest at most this many rows
  double max_rate = 0;          // rows per second, 0 = unlimited
  bool progress = false;
  bool use_stream = true;  // streaming Ingest RPC; false = unary Upsert batches
  int window = 4;          // batches in flight per stream
};

struct IngestResult {
  uint64_t rows = 0;      // rows of the input (after `limit`)
  uint64_t resumed = 0;   // rows already acknowledged by an earlier run (from the checkpoint)
  uint64_t sent = 0;      // rows sent in this run
  uint64_t backoffs = 0;  // batches the server asked to resend later
  double seconds = 0;
};

absl::StatusOr<IngestOptions> ParseIngestOptions(const Args& args);
absl::StatusOr<IngestResult> Ingest(const Connection& connection, const IngestOptions& options);

// `shoal ingest ...` (args.positional[0] == "ingest"): prints the result, returns the exit status.
int RunIngest(const Connection& connection, const Args& args);

// For the command-line parser (cli/command_line.h): the usage line and the flags.
std::string IngestUsage();
const std::vector<Flag>& IngestFlags();

}  // namespace shoal::cli

#endif  // SHOAL_CLI_INGEST_H_
