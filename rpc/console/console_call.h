// Private to rpc/console/console_*.cc: one API call as its handler sees it, and the route
// table's row type.
#ifndef SHOAL_RPC_CONSOLE_CONSOLE_CALL_H_
#define SHOAL_RPC_CONSOLE_CONSOLE_CALL_H_

#include <string>
#include <vector>

#include "rpc/api_keys.h"
#include "rpc/call_gate.h"
#include "rpc/console/console_api.h"
#include "shoal/db.h"

namespace shoal::rpc::console {

struct ConsoleApi::Call {
  const HttpRequest& request;
  std::vector<std::string> params;  // the path segments the route's '*'s matched, in order
  Json body;                        // {} for a request without one
  Principal principal;
  DB* db = nullptr;  // leased for the handler when its route asks for it
};

struct ConsoleApi::Route {
  const char* method;
  const char* pattern;  // "/api/collections/*/search": '*' matches one non-empty segment
  RpcMethod rpc;        // metrics name and least role
  Handler handler;
  bool lease;   // hold a DB lease around the handler (Restore must not: it waits for leases)
  bool record;  // record the latency in metrics (not for the metrics poll itself)
};

}  // namespace shoal::rpc::console

#endif  // SHOAL_RPC_CONSOLE_CONSOLE_CALL_H_
