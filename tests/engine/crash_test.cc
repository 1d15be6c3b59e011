// A real child process (crash_writer) runs random synced upserts, updates, deletes and index
// builds and is killed with SIGKILL at a random moment, cycle after cycle. After each kill the
// database is reopened and checked against an oracle kept here (key -> last acknowledged
// version, or deleted):
//  - every acknowledged write is found (Get returns the acknowledged version);
//  - no deleted key is returned by Get or Search, and no hit carries an old vector (its distance
//    is the distance to the key's current version);
//  - every live key keeps its owner tenant and exactly the grants acknowledged (tenant rows are
//    written in the record's batch);
//  - Verify is clean (it also checks owner and grant rows against the records).
// The one operation in flight at the kill may have happened or not: both outcomes are accepted.
// Seeds are printed (SHOAL_TEST_SEED=N replays one).
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/test_seed.h"
#include "shoal/db.h"
#include "tests/engine/crash_record.h"

extern char** environ;

namespace shoal {
namespace {

constexpr int kCycles = 24;
constexpr uint64_t kKeys = 1500;

struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;
};

Child SpawnWriter(const std::string& dir, uint64_t seed, uint64_t first_op) {
  // ctest sets SHOAL_BIN_DIR; run by hand, the writer sits beside this test's own binary.
  const char* bin_dir = std::getenv("SHOAL_BIN_DIR");
  std::string bin = (bin_dir != nullptr
                         ? std::string(bin_dir)
                         : std::filesystem::read_symlink("/proc/self/exe").parent_path().string()) +
                    "/crash_writer";
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::string a1 = std::to_string(seed), a2 = std::to_string(first_op), a3 = std::to_string(kKeys);
  std::vector<char*> argv = {
      bin.data(), const_cast<char*>(dir.c_str()), a1.data(), a2.data(), a3.data(), nullptr};
  Child c;
  EXPECT_EQ(posix_spawn(&c.pid, bin.c_str(), &actions, nullptr, argv.data(), environ), 0) << bin;
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  c.out = fdopen(fds[0], "r");
  return c;
}

// What the parent knows: each key's last acknowledged version (nullopt = deleted), and the
// operation in flight (announced, not acknowledged).
struct Oracle {
  std::map<uint64_t, std::optional<uint64_t>> state;
  std::map<uint64_t, uint64_t> last_put;  // key -> the last version written (deleted or not)
  struct Op {
    uint64_t id = 0;
    bool put = false;
    bool build = false;
    bool grant = false;
    std::vector<uint64_t> keys;
  };
  std::set<uint64_t> granted;  // live keys granted to tenant t<(k + 1) % 3>
  std::optional<Op> pending;
  uint64_t next_op = 0;
  uint64_t acks = 0, builds = 0;
  uint64_t pending_applied = 0, pending_dropped = 0;  // in-flight ops found done / not done
  uint64_t killed_in_build = 0;

  // Parses one line of the child's output; returns true for an "ack".
  bool Feed(const std::string& line) {
    std::istringstream in(line);
    std::string word;
    uint64_t id = 0;
    in >> word >> id;
    if (word == "op") {
      Op op{id, false, false, {}};
      std::string kind;
      in >> kind;
      op.put = kind == "put";
      op.build = kind == "build";
      op.grant = kind == "grant";
      builds += op.build;
      for (uint64_t k; in >> k;) op.keys.push_back(k);
      pending = op;
      next_op = id + 1;
      return false;
    }
    if (word != "ack" || !pending || pending->id != id) return false;
    for (uint64_t k : pending->keys) {
      if (pending->grant) {
        if (state[k].has_value()) granted.insert(k);
        continue;
      }
      state[k] = pending->put ? std::optional<uint64_t>(id) : std::nullopt;
      if (pending->put) last_put[k] = id;
      if (!pending->put) granted.erase(k);
    }
    pending.reset();
    ++acks;
    return true;
  }
  // The versions a key may have now (nullopt = absent).
  std::vector<std::optional<uint64_t>> Allowed(uint64_t key) const {
    auto it = state.find(key);
    std::vector<std::optional<uint64_t>> out = {it == state.end() ? std::nullopt : it->second};
    if (pending &&
        std::find(pending->keys.begin(), pending->keys.end(), key) != pending->keys.end()) {
      out.push_back(pending->put ? std::optional<uint64_t>(pending->id) : std::nullopt);
    }
    return out;
  }
};

float L2(const std::vector<float>& a, const std::vector<float>& b) {
  float d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += (a[i] - b[i]) * (a[i] - b[i]);
  return d;
}

// Checks the reopened database against the oracle, then settles the operation that was in flight
// (atomic: all its keys show the new state or none do) as it was found.
void CheckDatabase(const std::string& dir, Oracle& oracle, int cycle) {
  auto opened = DB::Open(dir, Options{});
  ASSERT_TRUE(opened.ok()) << "cycle " << cycle << ": " << opened.status();
  DB& db = **opened;
  // Get: every key the oracle knows.
  std::vector<Key> keys;
  for (const auto& [k, v] : oracle.state) keys.push_back(k);
  if (oracle.pending) {
    for (uint64_t k : oracle.pending->keys) {
      if (!oracle.state.contains(k)) keys.push_back(k);
    }
  }
  std::map<uint64_t, std::optional<uint64_t>> found_state;
  auto got = db.Get("crash", keys);
  ASSERT_TRUE(got.ok()) << got.status();
  for (size_t i = 0; i < keys.size(); ++i) {
    const uint64_t k = std::get<uint64_t>(keys[i]);
    std::optional<uint64_t> found;
    if ((*got)[i]) found = std::get<int64_t>((*got)[i]->attributes.at("version"));
    std::vector<std::optional<uint64_t>> allowed = oracle.Allowed(k);
    const bool pending_grant = oracle.pending && oracle.pending->grant &&
                               std::find(oracle.pending->keys.begin(), oracle.pending->keys.end(),
                                         k) != oracle.pending->keys.end();
    if (pending_grant) allowed.resize(1);
    ASSERT_NE(std::find(allowed.begin(), allowed.end(), found), allowed.end())
        << "cycle " << cycle << " key " << k << ": found version "
        << (found ? std::to_string(*found) : "none") << ", acknowledged "
        << (allowed[0] ? std::to_string(*allowed[0]) : "deleted");
    if (found) {
      ASSERT_EQ((*got)[i]->vector, test::CrashRecord(k, *found).vector);
    }
    // Tenant rows are written with the record: its owner is there, and its grant iff acked.
    if (found) {
      auto tenants = db.ListKeyTenants("crash", k);
      ASSERT_TRUE(tenants.ok()) << tenants.status();
      ASSERT_FALSE(tenants->empty()) << "cycle " << cycle << " key " << k << " lost its owner";
      EXPECT_EQ((*tenants)[0], "t" + std::to_string(k % 3)) << "cycle " << cycle << " key " << k;
      const bool grant = oracle.granted.contains(k);
      if (!pending_grant) {
        EXPECT_EQ(tenants->size(), grant ? 2u : 1u) << "cycle " << cycle << " key " << k;
      }
    }
    found_state[k] = found;
  }
  // Search with the vectors of deleted keys and of the newest versions: no hit may be a deleted
  // key or an old vector of a live one.
  std::vector<float> queries;
  size_t n = 0;
  for (const auto& [k, v] : oracle.state) {
    if (v.has_value() && n++ % 5 != 0) continue;  // every deleted key, a fifth of the live ones
    auto put = oracle.last_put.find(k);
    if (put == oracle.last_put.end()) continue;  // deleted, never written
    const std::vector<float> q = test::CrashRecord(k, put->second).vector;
    queries.insert(queries.end(), q.begin(), q.end());
  }
  auto hits = db.Search("crash", queries, {.k = 10});
  ASSERT_TRUE(hits.ok()) << hits.status();
  for (size_t qi = 0; qi < hits->size(); ++qi) {
    const std::vector<float> q(queries.begin() + qi * test::kCrashDim,
                               queries.begin() + (qi + 1) * test::kCrashDim);
    for (const Hit& h : (*hits)[qi]) {
      const uint64_t k = std::get<uint64_t>(h.key);
      bool explained = false;
      for (const auto& v : oracle.Allowed(k)) {
        if (!v) continue;
        const float d = L2(q, test::CrashRecord(k, *v).vector);
        explained |= std::abs(d - h.distance) <= 1e-3f * (1 + d);
      }
      ASSERT_TRUE(explained) << "cycle " << cycle << ": search returned key " << k
                             << " at distance " << h.distance
                             << ", which is deleted or an old version";
    }
  }
  VerifyReport report;
  absl::Status s = db.Verify("", &report);
  ASSERT_TRUE(s.ok()) << "cycle " << cycle << ": " << s;
  // Leftovers of a build the kill interrupted are gone: at most the index in use remains.
  size_t index_dirs = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/index")) {
    ++index_dirs;
    EXPECT_NE(e.path().extension(), ".tmp") << "cycle " << cycle << ": leftover " << e.path();
  }
  ASSERT_LE(index_dirs, 1u) << "cycle " << cycle;
  if (oracle.pending && oracle.pending->grant) {  // settled as found
    for (uint64_t k : oracle.pending->keys) {
      auto tenants = db.ListKeyTenants("crash", k);
      if (tenants.ok() && tenants->size() == 2) oracle.granted.insert(k);
    }
    oracle.pending.reset();
  }
  if (oracle.pending && oracle.pending->build) {
    ++oracle.killed_in_build;
    oracle.pending.reset();
  }
  if (oracle.pending) {
    int applied = 0;
    for (uint64_t k : oracle.pending->keys) {
      const bool now =
          found_state[k] ==
          (oracle.pending->put ? std::optional<uint64_t>(oracle.pending->id) : std::nullopt);
      const bool before = found_state[k] == oracle.Allowed(k)[0];
      applied += now && !before;
      oracle.state[k] = found_state[k];
      if (found_state[k]) oracle.last_put[k] = *found_state[k];
      if (!found_state[k]) oracle.granted.erase(k);
    }
    oracle.pending.reset();
    ++(applied > 0 ? oracle.pending_applied : oracle.pending_dropped);
  }
}

TEST(CrashTest, SigkilledWriterLosesNothingAcknowledgedAndReturnsNothingDeleted) {
  std::string tmpl = ::testing::TempDir() + "crash_test_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl;
  std::mt19937_64 rng(base::TestSeed());
  Oracle oracle;
  const auto t0 = std::chrono::steady_clock::now();
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    const uint64_t kill_after = std::uniform_int_distribution<uint64_t>(30, 300)(rng);
    const int delay_us = std::uniform_int_distribution<int>(0, 20000)(rng);
    Child child = SpawnWriter(dir, rng(), oracle.next_op);
    ASSERT_GT(child.pid, 0);
    char line[256];
    uint64_t seen = 0;
    const bool kill_in_build = rng() % 2 == 0;  // half the cycles end in the first build
    while (seen < kill_after && std::fgets(line, sizeof line, child.out) != nullptr) {
      seen += oracle.Feed(line);
      if (kill_in_build && oracle.pending && oracle.pending->build) break;
    }
    // Let the child run on for a random while: the kill lands anywhere, index builds included.
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
    kill(child.pid, SIGKILL);
    // Lines already in the pipe were written before the kill: acks among them count.
    while (std::fgets(line, sizeof line, child.out) != nullptr) oracle.Feed(line);
    fclose(child.out);
    int status = 0;
    waitpid(child.pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status))
        << "cycle " << cycle << ": writer exited early (status " << status << ")";
    CheckDatabase(dir, oracle, cycle);
    if (HasFatalFailure()) break;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "%d cycles, %lu acknowledged operations, %lu index builds started (%lu killed mid-build), "
      "%zu keys, in-flight writes found applied %lu / not applied %lu, %.1f s\n",
      kCycles, static_cast<unsigned long>(oracle.acks), static_cast<unsigned long>(oracle.builds),
      static_cast<unsigned long>(oracle.killed_in_build), oracle.state.size(),
      static_cast<unsigned long>(oracle.pending_applied),
      static_cast<unsigned long>(oracle.pending_dropped), seconds);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shoal
