// A real child process acknowledges synced writes and is killed with SIGKILL at a random moment;
// reopening must find every acknowledged write intact. Seeds are printed.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "shoal/db.h"
#include "tests/engine/crash_record.h"

extern char** environ;

namespace shoal {
namespace {

struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;
};

Child SpawnWriter(const std::string& dir, uint64_t first, uint64_t count) {
  const char* bin_dir = std::getenv("SHOAL_BIN_DIR");
  std::string bin = std::string(bin_dir ? bin_dir : "build/bin") + "/crash_writer";
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::string a1 = std::to_string(first), a2 = std::to_string(count);
  std::vector<char*> argv = {bin.data(), const_cast<char*>(dir.c_str()), a1.data(), a2.data(),
                             nullptr};
  Child c;
  EXPECT_EQ(posix_spawn(&c.pid, bin.c_str(), &actions, nullptr, argv.data(), environ), 0) << bin;
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  c.out = fdopen(fds[0], "r");
  return c;
}

TEST(CrashTest, SigkilledWriterLosesNoAcknowledgedSyncedWrite) {
  std::string tmpl = ::testing::TempDir() + "crash_test_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl;
  const unsigned seed = std::random_device{}();
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  std::vector<uint64_t> acked;
  uint64_t next_key = 0;
  constexpr int kCycles = 5;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    const uint64_t kill_after = std::uniform_int_distribution<uint64_t>(20, 120)(rng);
    Child child = SpawnWriter(dir, next_key, 1'000'000);
    ASSERT_GT(child.pid, 0);
    char line[64];
    uint64_t seen = 0;
    while (seen < kill_after && std::fgets(line, sizeof line, child.out) != nullptr) {
      uint64_t key = 0;
      if (std::sscanf(line, "ack %lu", &key) == 1) {
        acked.push_back(key);
        ++seen;
      }
    }
    kill(child.pid, SIGKILL);  // mid-write: the child is busy with its next upsert
    // Acks already in the pipe were acknowledged before the kill: they count too.
    while (std::fgets(line, sizeof line, child.out) != nullptr) {
      uint64_t key = 0;
      if (std::sscanf(line, "ack %lu", &key) == 1) acked.push_back(key);
    }
    fclose(child.out);
    int status = 0;
    waitpid(child.pid, &status, 0);
    ASSERT_EQ(seen, kill_after) << "writer stopped early (status " << status << ")";
    next_key = acked.back() + 1'000;  // unacknowledged keys beyond this may or may not exist

    auto db = DB::Open(dir, Options{});
    ASSERT_TRUE(db.ok()) << "cycle " << cycle << ": " << db.status();
    std::vector<Key> keys(acked.begin(), acked.end());
    auto got = (*db)->Get("crash", keys);
    ASSERT_TRUE(got.ok()) << got.status();
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_TRUE((*got)[i].has_value()) << "cycle " << cycle << " lost key " << acked[i];
      const Record want = test::CrashRecord(acked[i]);
      EXPECT_EQ((*got)[i]->vector, want.vector);
      EXPECT_EQ((*got)[i]->attributes, want.attributes);
    }
    auto hits = (*db)->Search("crash", test::CrashRecord(acked.back()).vector, {.k = 1});
    ASSERT_TRUE(hits.ok());
    EXPECT_EQ((*hits)[0][0].distance, 0.0f);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shoal
