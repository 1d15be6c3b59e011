#include "rpc/api_keys.h"

#include <fstream>
#include <sstream>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace shoal::rpc {
namespace {

constexpr size_t kMinKeyBytes = 16;
constexpr size_t kMaxKeyBytes = 256;

bool ValidName(absl::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') {
      return false;
    }
  }
  return true;
}

// A tenant name as the DB accepts it: [A-Za-z_][A-Za-z0-9_-]{0,63}.
bool ValidTenant(absl::string_view tenant) {
  if (tenant.empty() || tenant.size() > 64) return false;
  if (!absl::ascii_isalpha(static_cast<unsigned char>(tenant[0])) && tenant[0] != '_') {
    return false;
  }
  for (char c : tenant) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

// Equality whose running time depends only on the lengths, never on the contents: every byte
// pair up to the longer length is compared, without an early exit.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

}  // namespace

const char* RoleName(Role role) {
  switch (role) {
    case Role::kReadOnly:
      return "read-only";
    case Role::kReadWrite:
      return "read-write";
    case Role::kAdmin:
      return "admin";
  }
  return "unknown";
}

absl::StatusOr<ApiKeys> ApiKeys::Parse(absl::string_view text) {
  ApiKeys keys;
  absl::flat_hash_set<std::string> seen_keys, seen_names;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    std::vector<absl::string_view> words;
    for (absl::string_view f : fields) {
      for (absl::string_view w : absl::StrSplit(f, '\t', absl::SkipEmpty())) words.push_back(w);
    }
    const std::string where = absl::StrCat("line ", line_number, ": ");
    // A trailing "tenant=T" binds the key; it is never taken for the key or the name.
    std::string tenant;
    constexpr absl::string_view kTenantPrefix = "tenant=";
    if (words.size() >= 3 && absl::StartsWith(words.back(), kTenantPrefix)) {
      tenant = std::string(words.back().substr(kTenantPrefix.size()));
      words.pop_back();
      if (!ValidTenant(tenant)) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, "tenant must match [A-Za-z_][A-Za-z0-9_-]{0,63}"));
      }
    }
    if (words.size() < 2 || words.size() > 3) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "expected \"ROLE KEY [NAME] [tenant=T]\""));
    }
    Entry entry;
    if (words[0] == "admin") {
      entry.principal.role = Role::kAdmin;
    } else if (words[0] == "read-write") {
      entry.principal.role = Role::kReadWrite;
    } else if (words[0] == "read-only") {
      entry.principal.role = Role::kReadOnly;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          where, "unknown role \"", std::string(words[0]), "\" (admin, read-write, read-only)"));
    }
    if (!tenant.empty() && entry.principal.role == Role::kAdmin) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, "tenant: an admin key cannot be bound to a tenant (use read-write or read-only)"));
    }
    entry.principal.tenant = std::move(tenant);
    entry.key = std::string(words[1]);
    if (entry.key.size() < kMinKeyBytes || entry.key.size() > kMaxKeyBytes) {
      return absl::InvalidArgumentError(absl::StrCat(where, "key must be ", kMinKeyBytes, "..",
                                                     kMaxKeyBytes, " characters long"));
    }
    entry.principal.name =
        words.size() == 3 ? std::string(words[2]) : absl::StrCat("key", line_number);
    if (!ValidName(entry.principal.name)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "name must match [A-Za-z0-9_.-]{1,64}"));
    }
    if (!seen_keys.insert(entry.key).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, "duplicate key"));
    }
    if (!seen_names.insert(entry.principal.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "duplicate name \"", entry.principal.name, "\""));
    }
    keys.keys_.push_back(std::move(entry));
  }
  if (keys.keys_.empty()) return absl::InvalidArgumentError("no keys");
  return keys;
}

absl::StatusOr<ApiKeys> ApiKeys::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("key file: cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<ApiKeys> keys = Parse(text.str());
  if (!keys.ok()) {
    return absl::Status(keys.status().code(),
                        absl::StrCat("key file ", path, ": ", keys.status().message()));
  }
  return keys;
}

absl::StatusOr<Principal> ApiKeys::Authenticate(absl::string_view presented) const {
  if (presented.empty()) {
    return absl::UnauthenticatedError(
        "missing API key: send metadata \"authorization: Bearer KEY\" (or \"x-api-key\")");
  }
  // Every key is compared (no early exit), so the time does not tell which one matched.
  const Entry* match = nullptr;
  for (const Entry& entry : keys_) {
    if (ConstantTimeEquals(entry.key, presented)) match = &entry;
  }
  if (match == nullptr) return absl::UnauthenticatedError("invalid API key");
  return match->principal;
}

absl::string_view PresentedKey(absl::string_view authorization, absl::string_view x_api_key) {
  const absl::string_view kBearer = "Bearer ";
  if (authorization.size() > kBearer.size() &&
      absl::EqualsIgnoreCase(authorization.substr(0, kBearer.size()), kBearer)) {
    return absl::StripAsciiWhitespace(authorization.substr(kBearer.size()));
  }
  return absl::StripAsciiWhitespace(x_api_key);
}

}  // namespace shoal::rpc
