#include "shoal/power_cut.h"

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "db/db_impl.h"
#include "storage/fault_injection.h"

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

absl::Status PowerCut::Cut() {
  impl_->fs.PowerOff();
  absl::SleepFor(absl::Milliseconds(20));  // a write already past the power check lands first
  return impl_->fs.DropUnsyncedData(/*power_back_on=*/false);
}

}  // namespace shoal
