// End-to-end: `shoal cache ...` against a real shoald (one-shot, JSON when piped): create, set
// and show a policy, store, lookup (hit, other tenant's miss), stats, invalidate (dry run, then
// --apply), drop, and the usage errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cli/child_process.h"
#include "tests/cli/shoald_test.h"
#include "tests/e2e/shoald_process.h"

namespace shoal::cli_test {
namespace {

class ShellCacheE2eTest : public ShoaldTest {
 protected:
  RunResult Shoal(std::vector<std::string> args) {
    args.insert(args.begin(), {"--server", shoald_->address()});
    return RunShoal(args);
  }
};

TEST_F(ShellCacheE2eTest, CacheCommands) {
  RunResult r = Shoal({"cache", "create", "answers", "--dimension", "2"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out, "{\"created\":\"answers\"}\n");
  r = Shoal({"cache", "policy", "answers", "--category", "code", "--threshold", "0.95", "--ttl",
             "60", "--eviction", "fifo"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_NE(r.out.find("\"threshold\":0.95"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"ttl_seconds\":60"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CACHE_EVICTION_FIFO"), std::string::npos) << r.out;
  r = Shoal({"cache", "policy", "answers", "--category", "code"});  // shows it
  EXPECT_NE(r.out.find("\"threshold\":0.95"), std::string::npos) << r.out;

  r = Shoal({"cache", "store", "answers", "1,0", "--response", "use a mutex", "--prompt",
             "How do I lock?", "--tenant", "a", "--category", "code", "--sync"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out, "{\"entry\":1}\n");
  r = Shoal({"cache", "lookup", "answers", "0.99,0.05", "--tenant", "a", "--category", "code"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_NE(r.out.find("\"hit\":true"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"response\":\"use a mutex\""), std::string::npos) << r.out;
  r = Shoal({"cache", "lookup", "answers", "1,0", "--prompt", "how do i lock?", "--tenant", "b",
             "--category", "code"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_NE(r.out.find("\"hit\":false"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"similarity\":null"), std::string::npos) << r.out;

  r = Shoal({"cache", "stats", "answers", "--output", "csv"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_NE(r.out.find("code,1,"), std::string::npos) << r.out;
  r = Shoal({"cache", "list"});
  EXPECT_NE(r.out.find("\"name\":\"answers\",\"dimension\":2,\"metric\":\"cosine\",\"entries\":1"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(Shoal({"cache", "invalidate", "answers", "--tenant", "a"}).out,
            "{\"would_remove\":1}\n");
  EXPECT_EQ(Shoal({"cache", "invalidate", "answers", "--tenant", "a", "--apply"}).out,
            "{\"removed\":1}\n");
  EXPECT_EQ(Shoal({"cache", "drop", "answers"}).exit_status, 0);
  EXPECT_EQ(Shoal({"cache", "list"}).out, "[]\n");

  r = Shoal({"cache", "frobnicate", "answers"});
  EXPECT_EQ(r.exit_status, 2) << r.err;
  r = Shoal({"cache", "lookup", "nope", "1,0"});
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.err.find("NOT_FOUND"), std::string::npos) << r.err;
  r = Shoal({"cache", "create", "bad", "--dimension", "2", "--metric", "hamming"});
  EXPECT_NE(r.exit_status, 0);
}

}  // namespace
}  // namespace shoal::cli_test
