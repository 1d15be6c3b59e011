// `shoal offline --data DIR dump|verify`: looks at a data directory directly through the
// embedded library, no server (the directory must not be open in a running shoald).
//   dump    every collection: dimension, metric, vector count, index, index RAM, unindexed
//   verify  VerifyDatabase (include/shoal/verify.h): records decode, key map agrees, index
//           checksums; one line per problem on stderr and exit status 1 when any is found
#ifndef SHOAL_CLI_OFFLINE_H_
#define SHOAL_CLI_OFFLINE_H_

#include <string>
#include <vector>

#include "cli/args.h"

namespace shoal::cli {

// args.positional = {"offline", "dump"|"verify"}; returns the exit status.
int RunOffline(const Args& args);

// For the command-line parser (cli/command_line.h): the usage line and the flags.
std::string OfflineUsage();
const std::vector<Flag>& OfflineFlags();

}  // namespace shoal::cli

#endif  // SHOAL_CLI_OFFLINE_H_
