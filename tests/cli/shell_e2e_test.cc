// End-to-end: the `shoal` admin shell against a real shoald — one-shot commands in json / csv
// mode (stdout is a pipe), exit statuses and error codes, and the interactive REPL driven
// through a pseudo-terminal (prompt, help, tab completion of commands and collection names,
// history). Only loopback addresses are bound.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/cli/child_process.h"
#include "tests/cli/shoald_test.h"
#include "tests/e2e/shoald_process.h"

namespace shoal::cli_test {
namespace {

class ShellE2eTest : public ShoaldTest {
 protected:
  RunResult Shoal(std::vector<std::string> args) {
    args.insert(args.begin(), {"--server", shoald_->address()});
    return RunShoal(args);
  }
};

TEST_F(ShellE2eTest, OneShotCommandsPrintJsonWhenPiped) {
  RunResult r = Shoal({"create", "docs", "--dimension", "3", "--metric", "l2"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out,
            "{\"name\":\"docs\",\"dimension\":3,\"metric\":\"l2\",\"vectors\":0,\"index\":\"flat\","
            "\"aliases\":[]}\n");
  ASSERT_EQ(
      Shoal({"upsert", "docs", "7", "1,0,0", "--attrs", "color=red", "--tags", "t"}).exit_status,
      0);
  ASSERT_EQ(Shoal({"upsert", "docs", "name-8", "0,1,0", "--sync"}).exit_status, 0);

  r = Shoal({"describe", "docs"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_NE(r.out.find("\"vectors\":2"), std::string::npos) << r.out;

  r = Shoal({"search", "docs", "0.9,0.1,0", "--k", "2"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find("\"distance\"")), "[{\"query\":0,\"rank\":0,\"key\":7,")
      << r.out;
  EXPECT_NE(r.out.find("\"key\":\"name-8\""), std::string::npos) << r.out;

  r = Shoal({"search", "docs", "0,1,0", "--k", "5", "--filter", "color=red", "--output", "csv"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.rfind(',')), "query,rank,key,distance\n0,0,7") << r.out;
  r = Shoal({"search", "docs", "1,0,0", "--k", "5", "--filter", "!tag:t", "--output", "csv"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.rfind(',')), "query,rank,key,distance\n0,0,name-8") << r.out;

  r = Shoal({"get", "docs", "7", "--output", "csv"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out, "key,found,vector,attributes,tags\n7,true,\"1,0,0\",color=red,t\n");
  // JSON is typed: the vector an array of numbers, attributes an object, empty lists [].
  ASSERT_EQ(
      Shoal({"upsert", "docs", "9", "0.5,-0.25,0", "--attrs", "n=3,x=1.5,ok=true"}).exit_status, 0);
  r = Shoal({"get", "docs", "7", "9", "404"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(
      r.out,
      "[{\"key\":7,\"found\":true,\"vector\":[1.0,0.0,0.0],\"attributes\":{\"color\":\"red\"},"
      "\"tags\":[\"t\"]},"
      "{\"key\":9,\"found\":true,\"vector\":[0.5,-0.25,0.0],"
      "\"attributes\":{\"n\":3,\"ok\":true,\"x\":1.5},\"tags\":[]},"
      "{\"key\":404,\"found\":false,\"vector\":null,\"attributes\":{},\"tags\":[]}]\n");

  r = Shoal({"list", "--output", "table"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "name  dimension  metric  vectors  index  aliases");

  r = Shoal({"delete", "docs", "7", "404"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out, "{\"deleted\":1}\n");
}

TEST_F(ShellE2eTest, CountScrollAndDeleteByFilterPrintTypedJson) {
  ASSERT_EQ(Shoal({"create", "c", "--dimension", "2"}).exit_status, 0);
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(Shoal({"upsert", "c", std::to_string(i), "1,0", "--attrs", absl::StrCat("n=", i),
                     "--tags", i % 2 == 0 ? "even" : "odd"})
                  .exit_status,
              0);
  }
  RunResult r = Shoal({"count", "c", "--filter", "tag:even"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out, "{\"count\":3}\n");
  r = Shoal({"scroll", "c", "--filter", "n>=1", "--limit", "2"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const std::string first_page =
      "{\"records\":[{\"key\":1,\"attributes\":{\"n\":1},\"tags\":[\"odd\"]},"
      "{\"key\":2,\"attributes\":{\"n\":2},\"tags\":[\"even\"]}],\"next_page_token\":\"";
  ASSERT_EQ(r.out.substr(0, first_page.size()), first_page) << r.out;
  const size_t end = r.out.find('"', first_page.size());
  const std::string token = r.out.substr(first_page.size(), end - first_page.size());
  r = Shoal({"scroll", "c", "--filter", "n>=1", "--page-token", token, "--vectors"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out,
            "{\"records\":[{\"key\":3,\"vector\":[1.0,0.0],\"attributes\":{\"n\":3},"
            "\"tags\":[\"odd\"]},{\"key\":4,\"vector\":[1.0,0.0],\"attributes\":{\"n\":4},"
            "\"tags\":[\"even\"]}],\"next_page_token\":null}\n");
  r = Shoal({"scroll", "c", "--page-token", "garbage"});
  EXPECT_NE(r.exit_status, 0);
  EXPECT_NE(r.err.find("page_token"), std::string::npos) << r.err;
  // Without --apply a delete by filter only counts.
  r = Shoal({"delete", "c", "--filter", "tag:even"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out, "{\"would_delete\":3}\n");
  EXPECT_EQ(Shoal({"count", "c"}).out, "{\"count\":5}\n");
  r = Shoal({"delete", "c", "--filter", "tag:even", "--apply", "--sync"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out, "{\"deleted\":3}\n");
  EXPECT_EQ(Shoal({"delete", "c", "1", "--filter", "tag:odd"}).exit_status, 2);  // keys and filter
  EXPECT_EQ(Shoal({"delete", "c", "--all", "--apply"}).out, "{\"deleted\":2}\n");
  EXPECT_EQ(Shoal({"count", "c"}).out, "{\"count\":0}\n");
}

TEST_F(ShellE2eTest, ErrorsExitNonZeroWithTheGrpcCode) {
  // The wording cli/README.md and the Python SDK's errors.py document: FIELD: 'NAME' not found.
  RunResult r = Shoal({"describe", "missing"});
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_EQ(r.err, "error: NOT_FOUND: name: 'missing' not found\n");
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(Shoal({"drop", "missing"}).err, "error: NOT_FOUND: name: 'missing' not found\n");
  EXPECT_EQ(Shoal({"search", "missing", "1,0"}).err,
            "error: NOT_FOUND: name: 'missing' not found\n");

  ASSERT_EQ(Shoal({"create", "d2", "--dimension", "2"}).exit_status, 0);
  r = Shoal({"upsert", "d2", "1", "1,2,3"});
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.err.find("error: INVALID_ARGUMENT: records[0].vector"), std::string::npos) << r.err;

  r = Shoal({"describe"});  // missing argument: usage, exit 2
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_NE(r.err.find("usage: describe NAME"), std::string::npos) << r.err;
  r = Shoal({"frobnicate"});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_NE(r.err.find("unknown command"), std::string::npos) << r.err;

  const std::string address = shoald_->address();
  shoald_.reset();  // nobody listening any more
  r = RunShoal({"--server", address, "--timeout-ms", "2000", "list"});
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_TRUE(r.err.find("UNAVAILABLE") != std::string::npos ||
              r.err.find("DEADLINE_EXCEEDED") != std::string::npos)
      << r.err;
}

TEST_F(ShellE2eTest, UnknownFlagsAndArgumentsAreBadUsageAndChangeNothing) {
  RunResult r = Shoal({"create", "x5", "--dimension", "4", "--metirc", "ip"});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_NE(r.err.find("unknown flag --metirc (did you mean --metric?)"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
  r = Shoal({"list"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out, "[]\n");  // nothing was created

  ASSERT_EQ(Shoal({"create", "c", "--dimension", "4"}).exit_status, 0);
  r = Shoal({"search", "c", "1,0,0,0", "--top-k", "1"});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_NE(r.err.find("unknown flag --top-k"), std::string::npos) << r.err;
  r = Shoal({"describe", "c", "extra"});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_NE(r.err.find("unexpected argument \"extra\""), std::string::npos) << r.err;
  r = Shoal({"search", "c", "1,0,0,0", "--k", "many"});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_NE(r.err.find("--k: \"many\" is not a number"), std::string::npos) << r.err;

  // ingest has its own flags and the same strictness.
  r = RunShoal({"--server", shoald_->address(), "ingest", "f.fvecs", "--colection", "c"});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_NE(r.err.find("did you mean --collection?"), std::string::npos) << r.err;
}

TEST_F(ShellE2eTest, HelpPerCommandAndVersionEverywhere) {
  RunResult r = Shoal({"ingest", "--help"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_NE(r.out.find("usage: ingest FILE --collection NAME"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("alias-create"), std::string::npos) << r.out;  // not the global help
  r = Shoal({"help", "create"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_NE(r.out.find("usage: create NAME [--dimension D] [--metric l2|ip|cosine]"),
            std::string::npos)
      << r.out;

  for (std::vector<std::string> args :
       {std::vector<std::string>{"--version"}, std::vector<std::string>{"describe", "--version"}}) {
    r = RunShoal(args);
    ASSERT_EQ(r.exit_status, 0) << r.err;
    EXPECT_TRUE(r.out.starts_with("shoal 0.")) << r.out;
    EXPECT_NE(r.out.find(" (git "), std::string::npos) << r.out;
  }
  r = RunProgram(ShoaldBinary(), {"--version"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("shoald 0.")) << r.out;
  r = RunProgram(ShoaldBinary(), {"--listen", "127.0.0.1:0", "--dat", "/nonexistent"});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_NE(r.err.find("--dat"), std::string::npos) << r.err;
  r = RunProgram(ShoaldBinary(), {"--rate-limit-rps", "-5"});
  EXPECT_EQ(r.exit_status, 2) << r.err;
}

TEST_F(ShellE2eTest, ReplCompletesCommandsAndCollectionsAndKeepsHistory) {
  ASSERT_EQ(Shoal({"create", "zebra_images", "--dimension", "2"}).exit_status, 0);
  ASSERT_EQ(Shoal({"upsert", "zebra_images", "1", "0.5,0.5"}).exit_status, 0);
  const std::string history = data_dir_ + "-history";
  PtyChild shell;
  ASSERT_TRUE(shell.Start({"--server", shoald_->address()}, {"SHOAL_HISTORY=" + history}).ok());
  absl::StatusOr<std::string> out = shell.ReadUntil("shoal> ");
  ASSERT_TRUE(out.ok()) << out.status();

  shell.Write("help\n");
  out = shell.ReadUntil("shoal> ");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NE(out->find("describe NAME"), std::string::npos) << *out;

  // "desc<Tab>" completes the command, "zeb<Tab>" the collection name.
  shell.Write("desc\t");
  ASSERT_TRUE(shell.ReadUntil("describe ").ok());
  shell.Write("zeb\t");
  ASSERT_TRUE(shell.ReadUntil("zebra_images").ok());
  shell.Write("\n");
  out = shell.ReadUntil("shoal> ");
  ASSERT_TRUE(out.ok()) << out.status();
  // A terminal gets the table format.
  EXPECT_NE(out->find("name          dimension  metric  vectors  index"), std::string::npos)
      << *out;
  EXPECT_NE(out->find("zebra_images  2          l2      1        flat"), std::string::npos) << *out;

  shell.Write("describe nothing_here\n");
  out = shell.ReadUntil("shoal> ");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NE(out->find("error: NOT_FOUND"), std::string::npos) << *out;

  // Ctrl-P (previous history) twice recalls "describe zebra_images"; per-line --output works.
  shell.Write("\x10\x10 --output json\n");
  out = shell.ReadUntil("shoal> ");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NE(out->find("{\"name\":\"zebra_images\""), std::string::npos) << *out;

  shell.Write("quit\n");
  absl::StatusOr<int> status = shell.Wait(absl::Seconds(30));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(*status, 0);
  std::ifstream in(history);
  std::stringstream saved;
  saved << in.rdbuf();
  EXPECT_NE(saved.str().find("describe zebra_images"), std::string::npos) << saved.str();
  std::filesystem::remove(history);
}

}  // namespace
}  // namespace shoal::cli_test
