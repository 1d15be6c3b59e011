// crash_writer DIR SEED FIRST_OP KEYS: a child process for the crash test. Opens the database at
// DIR and runs random synced operations on keys [0, KEYS) until killed: upserts of 1-4 keys
// (new keys and updates; key k is owned by tenant "t<k % 3>"), grants of one key to tenant
// "t<(k + 1) % 3>", deletes of 1-3 keys, and now and then an index build. Operation n
// (n = FIRST_OP, FIRST_OP + 1, ...) writes version n of each key it upserts. Before an operation
// it prints "op N put K..." / "op N del K..." / "op N grant K" / "op N build", after it is
// acknowledged "ack N" (unbuffered, one write(2) per line). The parent SIGKILLs it at a moment of
// its choosing.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "shoal/db.h"
#include "tests/engine/crash_record.h"

namespace {

void Say(const std::string& line) {
  if (write(STDOUT_FILENO, line.data(), line.size()) < 0) std::exit(1);
}

int Fail(const std::string& what, const absl::Status& s) {
  std::fprintf(stderr, "crash_writer: %s: %s\n", what.c_str(), s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: crash_writer DIR SEED FIRST_OP KEYS\n");
    return 2;
  }
  std::mt19937_64 rng(std::strtoull(argv[2], nullptr, 10));
  const uint64_t first_op = std::strtoull(argv[3], nullptr, 10);
  const uint64_t keys = std::strtoull(argv[4], nullptr, 10);
  shoal::Options options;
  options.build_threads = 1;
  options.search_threads = 1;
  auto db = shoal::DB::Open(argv[1], options);
  if (!db.ok()) return Fail("open", db.status());
  auto created = (*db)->CreateCollection(shoal::test::CrashSpec());
  if (!created.ok() && created.code() != absl::StatusCode::kAlreadyExists) {
    return Fail("create", created);
  }
  // Tenants: key k is owned by tenant "t<k % 3>"; grants give it to "t<(k + 1) % 3>".
  for (int t = 0; t < 3; ++t) {
    auto made = (*db)->CreateTenant("crash", {"t" + std::to_string(t), {}});
    if (!made.ok() && made.code() != absl::StatusCode::kAlreadyExists) {
      return Fail("create tenant", made);
    }
  }
  std::uniform_int_distribution<uint64_t> key_of(0, keys - 1);
  for (uint64_t op = first_op;; ++op) {
    const int dice = static_cast<int>(rng() % 200);
    std::string line = "op " + std::to_string(op);
    absl::Status s;
    if (dice < 2) {
      Say(line + " build\n");
      // An index of nothing cannot be built (InvalidArgument): with no vector yet, or every key
      // deleted, the build is a no-op.
      auto info = (*db)->DescribeCollection("crash");
      if (!info.ok() || info->num_vectors > 0) {
        s = (*db)->BuildIndex("crash", shoal::test::kCrashIndexSpec);
      }
    } else if (dice < 30) {
      const uint64_t k = key_of(rng);
      Say(line + " grant " + std::to_string(k) + "\n");
      const std::vector<shoal::Key> one = {k};
      const std::string to = "t" + std::to_string((k + 1) % 3);
      s = (*db)->Grant("crash", to, one, {.sync = true});
      if (s.code() == absl::StatusCode::kNotFound) s = absl::OkStatus();  // a deleted key
    } else if (dice < 60) {
      std::vector<shoal::Key> del;
      line += " del";
      for (uint64_t n = 1 + rng() % 3; del.size() < n;) {
        const uint64_t k = key_of(rng);
        del.push_back(k);
        line += " " + std::to_string(k);
      }
      Say(line + "\n");
      s = (*db)->Delete("crash", del, {.sync = true}).status();
    } else {
      std::vector<shoal::Record> batch;
      std::vector<uint64_t> used;
      line += " put";
      const uint64_t owner = rng() % 3;  // every key of the batch belongs to this tenant
      for (uint64_t n = 1 + rng() % 4; batch.size() < n;) {
        const uint64_t k = key_of(rng) / 3 * 3 + owner;
        if (k >= keys) continue;
        if (std::find(used.begin(), used.end(), k) != used.end()) continue;
        used.push_back(k);
        batch.push_back(shoal::test::CrashRecord(k, op));
        line += " " + std::to_string(k);
      }
      Say(line + "\n");
      s = (*db)->Upsert("crash", batch, {.sync = true, .tenant = "t" + std::to_string(owner)});
    }
    if (!s.ok()) return Fail(line, s);
    Say("ack " + std::to_string(op) + "\n");
  }
}
