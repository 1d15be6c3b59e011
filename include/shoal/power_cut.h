// PowerCut: for crash tests of whole programs. It opens a DB whose files (Shoal's and
// RocksDB's) go through a fault-injecting file system, so that the test can cut the power:
// every write not yet synced is dropped, as on a machine that loses power, and nothing is
// written after. shoald uses it behind --testing-power-loss-on-sigusr1 (scripts/soak
// --power-loss). Not for production: every file write is tracked in memory.
//
//   shoal::PowerCut power;
//   SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<shoal::DB> db, power.Open("/data", options));
//   ...                            // writes from any thread
//   power.Cut();                   // the files are now as a power loss would leave them
//   std::_Exit(137);               // the DB must not be used or closed after a cut
//
// Thread safety: Open once; Cut may be called from any thread, once.
#ifndef SHOAL_POWER_CUT_H_
#define SHOAL_POWER_CUT_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shoal/db.h"
#include "shoal/options.h"

namespace shoal {

class PowerCut {
 public:
  PowerCut();
  ~PowerCut();
  PowerCut(const PowerCut&) = delete;
  PowerCut& operator=(const PowerCut&) = delete;

  // DB::Open through the fault-injecting file system. The PowerCut must outlive the DB.
  absl::StatusOr<std::unique_ptr<DB>> Open(const std::string& path, const Options& options);
  // Waits for the writes and syncs under way; every later write, sync, rename, creation and
  // removal fails; then every file goes back to its last synced content (a file never synced is
  // removed). The power stays off, and a thread that aborts from then on is held until the
  // process exits.
  absl::Status Cut();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shoal

#endif  // SHOAL_POWER_CUT_H_
