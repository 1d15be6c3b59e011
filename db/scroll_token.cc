#include "db/scroll_token.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace shoal::db {
namespace {

constexpr std::string_view kPrefix = "s1.";
constexpr char kUint64 = 0;
constexpr char kString = 1;

absl::Status BadToken(const char* why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "page_token: ", why, "; pass back the next_page_token of the previous page, or \"\""));
}

}  // namespace

std::string EncodeScrollToken(const Key& last) {
  std::string raw;
  if (const auto* u = std::get_if<uint64_t>(&last)) {
    raw.push_back(kUint64);
    for (int shift = 56; shift >= 0; shift -= 8) raw.push_back(static_cast<char>(*u >> shift));
  } else {
    raw.push_back(kString);
    raw.append(std::get<std::string>(last));
  }
  return absl::StrCat(std::string(kPrefix), absl::WebSafeBase64Escape(raw));
}

absl::StatusOr<Key> DecodeScrollToken(std::string_view token) {
  if (token.substr(0, kPrefix.size()) != kPrefix) return BadToken("not a scroll token");
  const std::string body(token.substr(kPrefix.size()));
  std::string raw;
  if (!absl::WebSafeBase64Unescape(body, &raw) || raw.empty()) {
    return BadToken("damaged");
  }
  if (raw[0] == kUint64 && raw.size() == 9) {
    uint64_t v = 0;
    for (size_t i = 1; i < 9; ++i) v = (v << 8) | static_cast<uint8_t>(raw[i]);
    return Key(v);
  }
  if (raw[0] == kString && raw.size() > 1 && raw.size() - 1 <= kMaxKeyBytes) {
    return Key(raw.substr(1));
  }
  return BadToken("damaged");
}

}  // namespace shoal::db
