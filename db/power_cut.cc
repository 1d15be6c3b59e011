#include "shoal/power_cut.h"

#include <signal.h>
#include <unistd.h>

#include "db/db_impl.h"
#include "storage/io/fault_injection.h"

namespace shoal {

struct PowerCut::Impl {
  storage::FaultInjectingFileSystem fs;
};

PowerCut::PowerCut() : impl_(std::make_unique<Impl>()) {}
PowerCut::~PowerCut() = default;

absl::StatusOr<std::unique_ptr<DB>> PowerCut::Open(const std::string& path,
                                                   const Options& options) {
  return db::DBImpl::Open(path, options, {&impl_->fs, impl_->fs.rocksdb_env()});
}

namespace {

// Debian's RocksDB keeps its assertions, and a WAL writer that failed (the power went off)
// asserts when the next write group uses it. A real power loss stops every thread at once;
// here the aborting thread waits for the exit instead, so that the process does not die
// halfway through restoring what the power left (a file truncated and not yet rewritten).
void HoldTheAbortingThread(int) {
  static constexpr char kMessage[] = "shoald: a thread aborted after the power cut; held\n";
  (void)!write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  for (;;) pause();
}

}  // namespace

absl::Status PowerCut::Cut() {
  struct sigaction hold = {};
  hold.sa_handler = HoldTheAbortingThread;
  sigaction(SIGABRT, &hold, nullptr);
  impl_->fs.PowerOff();  // waits for the writes and syncs under way
  return impl_->fs.DropUnsyncedData(/*power_back_on=*/false);
}

}  // namespace shoal
