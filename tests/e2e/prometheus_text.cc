#include "tests/e2e/prometheus_text.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <regex>
#include <set>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace shoal::e2e {
namespace {

const std::regex& MetricLine() {
  // name{label="value",...} value [timestamp]
  static const auto* re = new std::regex(
      R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*)\})? )"
      R"(([^ ]+)( -?[0-9]+)?$)");
  return *re;
}

const std::regex& LabelPair() {
  static const auto* re = new std::regex(R"(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)\",?)");
  return *re;
}

bool ParseValue(const std::string& text, double* value) {
  if (text == "+Inf") return (*value = 1e308 * 10, true);
  if (text == "-Inf") return (*value = -1e308 * 10, true);
  if (text == "NaN") return (*value = 0.0 / 0.0, true);
  return absl::SimpleAtod(text, value);
}

// The family a sample belongs to: histogram/summary samples carry a suffix.
std::string FamilyOf(const std::string& name, const std::set<std::string>& typed) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      const std::string base = name.substr(0, name.size() - s.size());
      if (typed.contains(base)) return base;
    }
  }
  return name;
}

}  // namespace

absl::StatusOr<std::vector<Sample>> ParsePrometheusText(const std::string& text) {
  std::vector<Sample> samples;
  std::set<std::string> typed, sampled;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  static const std::regex kHelp(R"(^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*$)");
  static const std::regex kType(
      R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$)");
  while (std::getline(in, line)) {
    ++number;
    const std::string where = absl::StrCat("line ", number, " \"", line, "\": ");
    if (line.empty()) continue;
    std::smatch m;
    if (line[0] == '#') {
      if (std::regex_match(line, m, kType)) {
        if (sampled.contains(m[1].str())) {
          return absl::InvalidArgumentError(where + "TYPE after the family's samples");
        }
        typed.insert(m[1].str());
      } else if (!std::regex_match(line, kHelp)) {
        return absl::InvalidArgumentError(where + "malformed comment");
      }
      continue;
    }
    if (!std::regex_match(line, m, MetricLine())) {
      return absl::InvalidArgumentError(where + "malformed sample");
    }
    Sample sample;
    sample.name = m[1].str();
    const std::string labels = m[3].str();
    for (auto it = std::sregex_iterator(labels.begin(), labels.end(), LabelPair());
         it != std::sregex_iterator(); ++it) {
      sample.labels[(*it)[1].str()] = (*it)[2].str();
    }
    if (!ParseValue(m[4].str(), &sample.value)) {
      return absl::InvalidArgumentError(where + "value is not a number");
    }
    const std::string family = FamilyOf(sample.name, typed);
    if (!typed.contains(family)) return absl::InvalidArgumentError(where + "no TYPE line");
    sampled.insert(family);
    samples.push_back(std::move(sample));
  }
  return samples;
}

std::optional<double> SampleValue(const std::vector<Sample>& samples, const std::string& name,
                                  const std::map<std::string, std::string>& labels) {
  for (const Sample& sample : samples) {
    if (sample.name != name) continue;
    bool match = true;
    for (const auto& [key, value] : labels) {
      auto it = sample.labels.find(key);
      match = match && it != sample.labels.end() && it->second == value;
    }
    if (match) return sample.value;
  }
  return std::nullopt;
}

absl::StatusOr<int> ConnectLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError("socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{.tv_sec = 30, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return absl::UnavailableError(absl::StrCat("connect to port ", port));
  }
  return fd;
}

absl::StatusOr<HttpResponse> HttpGet(int port, const std::string& path) {
  absl::StatusOr<int> connected = ConnectLoopback(port);
  if (!connected.ok()) return connected.status();
  const int fd = *connected;
  const std::string request = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return absl::UnavailableError("write");
  }
  std::string reply;
  char buffer[8192];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) reply.append(buffer, n);
  close(fd);
  // "HTTP/1.x CODE REASON\r\n...headers...\r\n\r\nbody"
  const size_t header_end = reply.find("\r\n\r\n");
  HttpResponse response;
  if (reply.rfind("HTTP/1.", 0) != 0 || header_end == std::string::npos ||
      !absl::SimpleAtoi(reply.substr(9, 3), &response.status)) {
    return absl::DataLossError(absl::StrCat("not an HTTP response: ", reply.substr(0, 64)));
  }
  response.body = reply.substr(header_end + 4);
  return response;
}

}  // namespace shoal::e2e
