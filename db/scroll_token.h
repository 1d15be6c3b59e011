// The page token of DB::Scroll: the last key a page examined, so the next page resumes after it
// (never an offset: writes between pages cannot shift it). Opaque to callers: "s1." followed by
// the web-safe base64 of a kind byte (0 uint64, 1 string) and the key's bytes (big-endian for a
// uint64).
//
//   std::string token = EncodeScrollToken(Key{uint64_t{42}});
//   absl::StatusOr<Key> after = DecodeScrollToken(token);  // 42
//
// Pure functions; thread-safe.
#ifndef SHOAL_DB_SCROLL_TOKEN_H_
#define SHOAL_DB_SCROLL_TOKEN_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "shoal/types.h"

namespace shoal::db {

std::string EncodeScrollToken(const Key& last);
// InvalidArgument naming "page_token" for anything EncodeScrollToken does not make.
absl::StatusOr<Key> DecodeScrollToken(std::string_view token);

}  // namespace shoal::db

#endif  // SHOAL_DB_SCROLL_TOKEN_H_
