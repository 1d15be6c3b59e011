// A child process (cache_crash_writer) stores semantic-cache entries, each synced, and is
// killed with SIGKILL at a random moment, cycle after cycle. After each kill the database is
// reopened here and checked against what the child acknowledged:
//  - every acknowledged entry of the category without TTL answers its exact prompt, with its
//    response, in its own tenant's partition only;
//  - no entry of the 1-second-TTL category is served once a second has passed since the kill
//    (all of them are then expired: nothing expired is served after a restart);
// The store in flight at the kill may have happened or not. Seeds are printed.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/test_seed.h"
#include "shoal/db.h"

extern char** environ;

namespace shoal {
namespace {

constexpr int kCycles = 6;

// Runs the writer from entry `first`, kills it after `acks_wanted` acknowledgements (or when it
// stops), and returns the acknowledged entries (i -> id) and the one in flight (or -1).
std::map<uint64_t, uint64_t> RunAndKill(const std::string& dir, uint64_t first,
                                        uint64_t acks_wanted, int64_t* pending) {
  // ctest sets SHOAL_BIN_DIR; run by hand, the writer sits beside this test's own binary.
  const char* bin_dir = std::getenv("SHOAL_BIN_DIR");
  std::string bin = (bin_dir != nullptr
                         ? std::string(bin_dir)
                         : std::filesystem::read_symlink("/proc/self/exe").parent_path().string()) +
                    "/cache_crash_writer";
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::string a1 = std::to_string(first);
  std::vector<char*> argv = {bin.data(), const_cast<char*>(dir.c_str()), a1.data(), nullptr};
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, bin.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (spawned != 0 || pid <= 0) {  // never kill(pid <= 0): that signals a whole process group
    ADD_FAILURE() << "could not start " << bin << ": " << std::strerror(spawned);
    close(fds[0]);
    return {};
  }
  FILE* out = fdopen(fds[0], "r");
  std::map<uint64_t, uint64_t> acked;
  *pending = -1;
  char kind = 0;
  unsigned long long i = 0, id = 0;
  bool killed = false;
  while (true) {
    if (!killed && acked.size() >= acks_wanted) {
      kill(pid, SIGKILL);
      killed = true;
    }
    if (std::fscanf(out, " %c %llu", &kind, &i) != 2) break;
    if (kind == 'P') {
      *pending = static_cast<int64_t>(i);
    } else if (std::fscanf(out, " %llu", &id) == 1) {
      acked[i] = id;
      *pending = -1;
    }
  }
  if (!killed) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  std::fclose(out);
  return acked;
}

TEST(CacheCrashTest, SigkillLosesNoAcknowledgedStoreAndServesNothingExpired) {
  std::mt19937 rng(base::TestSeed());
  std::string tmpl = ::testing::TempDir() + "cache_crash_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl;
  std::map<uint64_t, uint64_t> kept;  // every acknowledged "keep" entry so far
  uint64_t next = 0, short_checked = 0;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    int64_t pending = -1;
    const uint64_t wanted = 5 + rng() % 60;
    std::map<uint64_t, uint64_t> acked = RunAndKill(dir, next, wanted, &pending);
    ASSERT_GE(acked.size(), wanted) << "the writer stopped early (see its stderr)";
    for (const auto& [i, id] : acked) {
      if (i % 2 == 0) kept[i] = id;
      next = std::max(next, i + 1);
    }
    if (pending >= 0) next = std::max<uint64_t>(next, pending + 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // every short entry expires
    auto db = DB::Open(dir, Options{});
    ASSERT_TRUE(db.ok()) << db.status();
    auto lookup = [&](uint64_t i, const std::string& tenant) {
      CacheLookupRequest q{.partition = {.tenant = tenant},
                           .category = i % 2 == 0 ? "keep" : "short",
                           .embedding = std::vector<float>(8, 1.0f),
                           .prompt = "p" + std::to_string(i)};
      auto r = (*db)->CacheLookup("crash", q);
      EXPECT_TRUE(r.ok()) << r.status();
      return r.value_or(CacheLookupResult{});
    };
    for (const auto& [i, id] : kept) {
      CacheLookupResult r = lookup(i, "t" + std::to_string(i % 3));
      ASSERT_TRUE(r.hit && r.exact) << "cycle " << cycle << ": acknowledged entry " << i << " lost";
      EXPECT_EQ(r.response, "r" + std::to_string(i));
      EXPECT_EQ(r.entry_id, id);
      EXPECT_FALSE(lookup(i, "t" + std::to_string((i + 1) % 3)).hit) << i;
    }
    for (const auto& [i, id] : acked) {
      if (i % 2 == 1) {
        EXPECT_FALSE(lookup(i, "t" + std::to_string(i % 3)).hit) << "expired entry " << i;
        ++short_checked;
      }
    }
  }
  EXPECT_GT(kept.size(), 10u);
  EXPECT_GT(short_checked, 10u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shoal
