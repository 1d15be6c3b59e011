// A small reader of the Prometheus text exposition format (version 0.0.4) for end-to-end
// tests, and a plain HTTP/1.0 GET to fetch it.
//
//   SHOAL_ASSIGN_OR_RETURN(std::string body, HttpGet(port, "/metrics"));
//   SHOAL_ASSIGN_OR_RETURN(std::vector<Sample> samples, ParsePrometheusText(body));
//   double n = SampleValue(samples, "shoal_rpc_duration_seconds_count",
//                          {{"method", "SearchService/Search"}, {"code", "OK"}});
//
// Stateless; thread-safe.
#ifndef SHOAL_TESTS_E2E_PROMETHEUS_TEXT_H_
#define SHOAL_TESTS_E2E_PROMETHEUS_TEXT_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace shoal::e2e {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Every sample line; INVALID_ARGUMENT naming the line when one is malformed: a comment other
// than "# HELP name ..." / "# TYPE name counter|gauge|histogram|summary|untyped", a bad metric
// or label name, an unterminated label value, a value that is not a number, a TYPE after the
// family's samples, or a sample of a family with no TYPE line.
absl::StatusOr<std::vector<Sample>> ParsePrometheusText(const std::string& text);

// The value of the sample with this name whose labels include `labels`; nullopt if none.
std::optional<double> SampleValue(const std::vector<Sample>& samples, const std::string& name,
                                  const std::map<std::string, std::string>& labels = {});

// GET `path` from 127.0.0.1:`port`; the status code and body.
struct HttpResponse {
  int status = 0;
  std::string body;
};
absl::StatusOr<HttpResponse> HttpGet(int port, const std::string& path);
// A TCP connection to 127.0.0.1:port (30 s receive timeout); the caller closes the fd.
absl::StatusOr<int> ConnectLoopback(int port);

}  // namespace shoal::e2e

#endif  // SHOAL_TESTS_E2E_PROMETHEUS_TEXT_H_
