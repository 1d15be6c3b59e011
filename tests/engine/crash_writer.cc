// crash_writer DIR FIRST_KEY COUNT: a child process for crash tests. Opens the database at DIR,
// upserts keys FIRST_KEY.. one synced batch at a time, and after each acknowledged write prints
// "ack KEY" on stdout (unbuffered). The parent SIGKILLs it at a moment of its choosing.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "shoal/db.h"
#include "tests/engine/crash_record.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: crash_writer DIR FIRST_KEY COUNT\n");
    return 2;
  }
  const uint64_t first = std::strtoull(argv[2], nullptr, 10);
  const uint64_t count = std::strtoull(argv[3], nullptr, 10);
  auto db = shoal::DB::Open(argv[1], shoal::Options{});
  if (!db.ok()) {
    std::fprintf(stderr, "open: %s\n", db.status().ToString().c_str());
    return 1;
  }
  auto created = (*db)->CreateCollection(shoal::test::CrashSpec());
  if (!created.ok() && created.code() != absl::StatusCode::kAlreadyExists) {
    std::fprintf(stderr, "create: %s\n", created.ToString().c_str());
    return 1;
  }
  for (uint64_t key = first; key < first + count; ++key) {
    shoal::Record rec = shoal::test::CrashRecord(key);
    absl::Status s = (*db)->Upsert("crash", {&rec, 1}, {.sync = true});
    if (!s.ok()) {
      std::fprintf(stderr, "upsert %llu: %s\n", static_cast<unsigned long long>(key),
                   s.ToString().c_str());
      return 1;
    }
    std::string line = "ack " + std::to_string(key) + "\n";
    if (write(STDOUT_FILENO, line.data(), line.size()) < 0) return 1;
  }
  return 0;
}
