// Unit tests of the `shoal` tool's pieces that need no server: argument parsing, output
// formats, the ingest checkpoint and its acknowledged prefix, the progress line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "cli/args.h"
#include "cli/command_line.h"
#include "cli/commands_internal.h"
#include "cli/ingest_checkpoint.h"
#include "cli/output.h"
#include "cli/progress.h"

namespace shoal::cli {
namespace {

namespace v1 = ::shoal::v1;

TEST(ArgsTest, SplitsQuotedWordsAndRejectsUnterminatedQuote) {
  absl::StatusOr<std::vector<std::string>> words =
      SplitLine(R"(  upsert  docs "a b" 'c"d' e\ f  )");
  ASSERT_TRUE(words.ok()) << words.status();
  EXPECT_EQ(*words, (std::vector<std::string>{"upsert", "docs", "a b", "c\"d", "e f"}));
  EXPECT_EQ(SplitLine("describe 'docs").status().code(), absl::StatusCode::kInvalidArgument);
}

absl::StatusOr<CommandLine> Parse(std::vector<std::string> words,
                                  LineMode mode = LineMode::kProgram) {
  return ParseCommandLine(words, mode);
}

// A usage error whose message holds every one of `parts`.
void ExpectUsageError(const absl::StatusOr<CommandLine>& line,
                      const std::vector<std::string>& parts) {
  ASSERT_FALSE(line.ok());
  EXPECT_TRUE(IsUsageError(line.status())) << line.status();
  for (const std::string& part : parts) {
    EXPECT_NE(line.status().message().find(part), std::string::npos) << line.status();
  }
}

TEST(CommandLineTest, ParsesGlobalFlagsCommandFlagsAndNumbers) {
  absl::StatusOr<CommandLine> line =
      Parse({"--server", "h:1", "create", "x", "--dimension=8", "--metric", "ip"});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(line->action, CommandLine::Action::kRun);
  const Args& args = line->args;
  EXPECT_EQ(args.positional, (std::vector<std::string>{"create", "x"}));
  EXPECT_EQ(args.Get("server", ""), "h:1");
  EXPECT_EQ(*args.GetUint("dimension", 0), 8u);
  EXPECT_EQ(args.Get("metric", ""), "ip");

  // Global flags may follow the command; switches take no value; negative numbers are words.
  line = Parse({"upsert", "d", "7", "-1,0.5", "--sync", "--output", "csv"});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(line->args.positional, (std::vector<std::string>{"upsert", "d", "7", "-1,0.5"}));
  EXPECT_TRUE(line->args.Has("sync"));
  EXPECT_EQ(line->args.Get("output", ""), "csv");

  Args bad = line->args;
  bad.flags["k"] = "-1";
  absl::Status not_a_number = bad.GetUint("k", 0).status();
  EXPECT_TRUE(IsUsageError(not_a_number)) << not_a_number;
  EXPECT_NE(not_a_number.message().find("--k"), std::string::npos) << not_a_number;
}

TEST(CommandLineTest, RefusesUnknownFlagsCommandsAndSurplusArguments) {
  ExpectUsageError(
      Parse({"create", "x5", "--dimension", "4", "--metirc", "ip"}),
      {"create: unknown flag --metirc", "did you mean --metric?", "shoal create --help"});
  ExpectUsageError(Parse({"search", "c", "1,0,0,0", "--top-k", "1"}), {"unknown flag --top-k"});
  ExpectUsageError(Parse({"describe", "a", "b"}), {"unexpected argument \"b\""});
  ExpectUsageError(Parse({"list", "extra"}), {"list: unexpected argument \"extra\""});
  ExpectUsageError(Parse({"frobnicate"}), {"unknown command \"frobnicate\""});
  ExpectUsageError(Parse({"search", "c", "1,0", "--k"}), {"search: "});
  ExpectUsageError(Parse({"--no-such-flag", "list"}), {"unknown flag --no-such-flag"});
  // The shell knows only the commands and --output: no connection flags, no ingest.
  ExpectUsageError(Parse({"list", "--server", "h:1"}, LineMode::kShell), {"--server"});
  ExpectUsageError(Parse({"ingest", "f.fvecs"}, LineMode::kShell), {"unknown command"});
}

TEST(CommandLineTest, ParsesTenantCommandsAndTheTenantFlag) {
  absl::StatusOr<CommandLine> line =
      Parse({"tenant", "create", "docs", "acme", "--max-vectors", "10", "--max-qps", "2.5"});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(line->args.positional, (std::vector<std::string>{"tenant", "create", "docs", "acme"}));
  EXPECT_EQ(*line->args.GetUint("max-vectors", 0), 10u);
  EXPECT_EQ(*line->args.GetDouble("max-qps", 0), 2.5);
  line = Parse({"tenant", "grant", "docs", "beta", "1", "2", "name-3", "--sync"});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(line->args.positional.size(), 7u);
  const std::vector<std::vector<std::string>> with_tenant = {
      {"upsert", "docs", "1", "1,2", "--tenant", "acme"},
      {"get", "docs", "1", "2", "--tenant", "acme"},
      {"delete", "docs", "1", "--tenant", "acme"},
      {"search", "docs", "1,2", "--tenant", "acme"}};
  for (const std::vector<std::string>& words : with_tenant) {
    line = Parse(words);
    ASSERT_TRUE(line.ok()) << words[0] << ": " << line.status();
    EXPECT_EQ(line->args.Get("tenant", ""), "acme") << words[0];
  }
  ExpectUsageError(Parse({"tenant", "list", "docs", "--tenant", "acme"}),
                   {"unknown flag --tenant"});
  ExpectUsageError(Parse({"list", "--tenant", "acme"}), {"unknown flag --tenant"});
}

TEST(CommandLineTest, PrintsPerCommandHelpAndTheVersion) {
  absl::StatusOr<CommandLine> line = Parse({"ingest", "--help"});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(line->action, CommandLine::Action::kPrint);
  EXPECT_NE(line->text.find("usage: ingest FILE --collection NAME"), std::string::npos)
      << line->text;
  EXPECT_NE(line->text.find("--checkpoint"), std::string::npos) << line->text;

  line = Parse({"help", "stats"}, LineMode::kShell);
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_NE(line->text.find("usage: stats\n"), std::string::npos) << line->text;

  line = Parse({"--help"});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_NE(line->text.find("--timeout-ms N"), std::string::npos) << line->text;
  EXPECT_NE(line->text.find("describe NAME"), std::string::npos) << line->text;

  for (std::vector<std::string> words :
       {std::vector<std::string>{"--version"}, std::vector<std::string>{"list", "--version"}}) {
    line = Parse(words);
    ASSERT_TRUE(line.ok()) << line.status();
    EXPECT_EQ(line->action, CommandLine::Action::kPrint);
    EXPECT_EQ(line->text, VersionLine("shoal"));
  }
  EXPECT_TRUE(absl::StartsWith(VersionLine("shoal"), "shoal 0.")) << VersionLine("shoal");
  EXPECT_NE(VersionLine("shoal").find(" (git "), std::string::npos) << VersionLine("shoal");
}

Table Sample() {
  Table t{.columns = {"name", "vectors", "note"}};
  t.rows.push_back({Cell::Text("docs"), Cell::Number(uint64_t{42}), Cell::Text("a,\"b\"")});
  t.rows.push_back({Cell::Text("x\ny"), Cell::Number(1.5), Cell::Null()});
  return t;
}

TEST(OutputTest, RendersJsonCsvAndTable) {
  EXPECT_EQ(Render(Sample(), OutputFormat::kJson),
            "[{\"name\":\"docs\",\"vectors\":42,\"note\":\"a,\\\"b\\\"\"},"
            "{\"name\":\"x\\ny\",\"vectors\":1.5,\"note\":null}]\n");
  EXPECT_EQ(Render(Sample(), OutputFormat::kCsv),
            "name,vectors,note\ndocs,42,\"a,\"\"b\"\"\"\n\"x\ny\",1.5,\n");
  const std::string table = Render(Sample(), OutputFormat::kTable);
  EXPECT_EQ(table.substr(0, table.find('\n')), "name  vectors  note");
  Table one{.columns = {"a"}, .single = true};
  one.rows.push_back({Cell::Bool(true)});
  EXPECT_EQ(Render(one, OutputFormat::kJson), "{\"a\":true}\n");
  EXPECT_EQ(ParseOutputFormat("yaml").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(OutputTest, JsonIsTypedAndTablesUseHumanUnits) {
  Table t{.columns = {"vector", "tags", "attributes", "bytes", "seconds", "distance"}};
  t.rows.push_back({Cell::List({Cell::Number(0.1f), Cell::Number(-2.0f)}), Cell::List({}),
                    Cell::Object({{"n", Cell::Number(int64_t{-3})}, {"on", Cell::Bool(true)}}),
                    Cell::Bytes(195648000), Cell::Seconds(85.545328), Cell::Number(0.3f)});
  EXPECT_EQ(Render(t, OutputFormat::kJson),
            "[{\"vector\":[0.1,-2.0],\"tags\":[],\"attributes\":{\"n\":-3,\"on\":true},"
            "\"bytes\":195648000,\"seconds\":85.545328,\"distance\":0.3}]\n");
  // CSV: raw numbers; lists and objects as text.
  EXPECT_EQ(Render(t, OutputFormat::kCsv),
            "vector,tags,attributes,bytes,seconds,distance\n"
            "\"0.1,-2\",,\"n=-3,on=true\",195648000,85.545328,0.3\n");
  const std::string table = Render(t, OutputFormat::kTable);
  EXPECT_NE(table.find("186.6 MiB"), std::string::npos) << table;
  EXPECT_NE(table.find("1 min 25 s"), std::string::npos) << table;
  EXPECT_EQ(Cell::Bytes(512).text(), "512 B");
  EXPECT_EQ(Cell::Bytes(uint64_t{3} << 40).text(), "3.0 TiB");
  EXPECT_EQ(Cell::Seconds(0.0123).text(), "12.3 ms");
  EXPECT_EQ(Cell::Seconds(7500).text(), "2 h 5 min");
  EXPECT_TRUE(Cell::Number(std::nan("")).is_null());
}

TEST(FilterTest, ParsesTermsIntoTheWireFilter) {
  absl::StatusOr<v1::Filter> f = ParseFilter("lang=en,year>=2020,!tag:draft,n<=3.5");
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(f->all_of().filters_size(), 4);
  EXPECT_EQ(f->all_of().filters(0).equals().name(), "lang");
  EXPECT_EQ(f->all_of().filters(0).equals().value().string_value(), "en");
  EXPECT_EQ(f->all_of().filters(1).range().name(), "year");
  EXPECT_EQ(f->all_of().filters(1).range().lo(), 2020);
  EXPECT_FALSE(f->all_of().filters(1).range().has_hi());
  EXPECT_EQ(f->all_of().filters(2).negate().has_tag(), "draft");
  EXPECT_EQ(f->all_of().filters(3).range().hi(), 3.5);
  absl::StatusOr<v1::Filter> one = ParseFilter("n=3");
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->equals().value().int_value(), 3);
  absl::Status bad = ParseFilter("a=1,year>2020").status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("term 1 \"year>2020\""), std::string::npos) << bad;
  EXPECT_EQ(ParseFilter("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AckedPrefixTest, AdvancesOnlyOverContiguousAcks) {
  AckedPrefix acked(100);
  EXPECT_EQ(acked.Ack(200, 100), 100u);  // gap [100, 200)
  EXPECT_EQ(acked.Ack(300, 50), 100u);
  EXPECT_EQ(acked.Ack(100, 100), 350u);
  EXPECT_EQ(acked.Ack(0, 10), 350u);  // already covered
  EXPECT_EQ(acked.done(), 350u);
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/shoal-cli-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(CheckpointTest, RoundTripsAndDetectsAnotherIngest) {
  const std::string path = dir_ + "/ck";
  absl::StatusOr<std::optional<Checkpoint>> missing = LoadCheckpoint(path);
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_FALSE(missing->has_value());
  Checkpoint c{.file = "/d/a.fvecs", .collection = "docs", .key_offset = 5, .rows = 10, .done = 4};
  ASSERT_TRUE(SaveCheckpoint(path, c).ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  absl::StatusOr<std::optional<Checkpoint>> loaded = LoadCheckpoint(path);
  ASSERT_TRUE(loaded.ok() && loaded->has_value()) << loaded.status();
  EXPECT_EQ((*loaded)->done, 4u);
  EXPECT_EQ((*loaded)->Mismatch(c), "");
  Checkpoint other = c;
  other.collection = "images";
  EXPECT_NE((*loaded)->Mismatch(other).find("collection"), std::string::npos);
}

TEST_F(CheckpointTest, MalformedFileIsDataLossNamingTheLine) {
  const std::string path = dir_ + "/ck";
  std::ofstream(path) << "file=a\ndone=x\n";
  absl::Status s = LoadCheckpoint(path).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find(path + ":2"), std::string::npos) << s;
}

TEST(ProgressBarTest, LineShowsRowsRateAndEta) {
  const std::string line = ProgressBar::Line(60000, 10000, 30000, absl::Seconds(2));
  EXPECT_NE(line.find("30000/60000 rows"), std::string::npos) << line;
  EXPECT_NE(line.find("10.0k rows/s"), std::string::npos) << line;  // (30000 - 10000) / 2 s
  EXPECT_NE(line.find("ETA 3s"), std::string::npos) << line;
  EXPECT_NE(line.find("[##########..........]"), std::string::npos) << line;
}

}  // namespace
}  // namespace shoal::cli
