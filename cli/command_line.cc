#include "cli/command_line.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/build_info.h"
#include "cli/commands.h"
#include "cli/ingest.h"
#include "cli/offline.h"

namespace shoal::cli {
namespace {

// CLI11 reports through exceptions; this file is the one place they are caught (our code does
// not throw).

const std::vector<Flag>& ConnectionFlags() {
  static const std::vector<Flag> kFlags = {
      {"server", "HOST:PORT", "shoald to talk to (default 127.0.0.1:50051, or $SHOAL_SERVER)"},
      {"tls", nullptr, "use TLS (system roots unless --tls-ca)"},
      {"tls-ca", "FILE", "CA certificates (PEM) to verify the server with"},
      {"tls-cert", "FILE", "client certificate (PEM), with --tls-key"},
      {"tls-key", "FILE", "client private key (PEM)"},
      {"tls-server-name", "NAME", "name to verify the server's certificate against"},
      {"timeout-ms", "N", "deadline of each call (default 30000)"},
  };
  return kFlags;
}

const Flag kOutputFlag = {"output", "table|json|csv",
                          "output format (default: table on a terminal, json otherwise)"};

// Prints the command's own usage line (from the command table) instead of CLI11's generic one.
class UsageFormatter : public CLI::Formatter {
 public:
  explicit UsageFormatter(std::string usage) : usage_(std::move(usage)) {}
  std::string make_usage(const CLI::App*, std::string) const override {
    return absl::StrCat("usage: ", usage_, "\n");
  }

 private:
  std::string usage_;
};

void AddFlags(CLI::App* app, const std::vector<Flag>& flags, const std::string& group) {
  for (const Flag& flag : flags) {
    const std::string name = absl::StrCat("--", flag.name);
    CLI::Option* option =
        flag.value == nullptr ? app->add_flag(name, flag.help) : app->add_option(name, flag.help);
    if (flag.value != nullptr) option->type_name(flag.value);
    option->group(group);
  }
}

// A subcommand with its flags and, when it takes any, positional words.
CLI::App* AddSubcommand(CLI::App* root, const std::string& name, const std::string& help,
                        const std::string& usage, size_t max_arguments,
                        const std::vector<Flag>& flags) {
  CLI::App* sub = root->add_subcommand(name, help);
  sub->fallthrough();  // global flags (and --version) may follow the command
  sub->set_help_flag("-h,--help", "print this help")->group("Flags");
  sub->formatter(std::make_shared<UsageFormatter>(usage));
  sub->footer("Global flags (--output, --server, ...) may follow the command; see shoal --help.");
  if (max_arguments > 0) {
    // Takes any number of words: Parser::Collect() refuses surplus ones after unknown flags
    // (whose values would otherwise be blamed first).
    sub->add_option("arguments", "")
        ->expected(0, CLI::detail::expected_max_vector_size)
        ->allow_extra_args()
        ->group("");
  }
  AddFlags(sub, flags, "Flags");
  return sub;
}

// Edit distance, for "did you mean".
size_t Distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// "--metirc" -> " (did you mean --metric?)" when a flag of `app` or its parent is close.
std::string Suggestion(const CLI::App* app, const std::string& word) {
  const std::string wanted = word.substr(0, word.find('='));
  std::string best;
  size_t best_distance = 3;  // at most two edits away
  for (const CLI::App* a = app; a != nullptr; a = a->get_parent()) {
    for (const CLI::Option* option : a->get_options()) {
      for (const std::string& name : option->get_lnames()) {
        const size_t d = Distance(wanted, "--" + name);
        if (d < best_distance) {
          best_distance = d;
          best = "--" + name;
        }
      }
    }
  }
  return best.empty() ? "" : absl::StrCat(" (did you mean ", best, "?)");
}

struct Parser {
  CLI::App root{"shoal: Shoal's admin shell and tools", "shoal"};
  LineMode mode;
  std::map<std::string, size_t> max_arguments;  // by command

  explicit Parser(LineMode line_mode) : mode(line_mode) {
    root.allow_extras();  // reported below, with a hint, as usage errors
    root.require_subcommand(0, 1);
    root.set_version_flag("--version", VersionLine("shoal"), "print the version and exit");
    root.set_help_flag("-h,--help", "print this help (COMMAND --help: the command's)");
    AddFlags(&root, {kOutputFlag}, "Global flags");
    if (mode == LineMode::kProgram) AddFlags(&root, ConnectionFlags(), "Global flags");
    for (const Command& command : Commands()) {
      Add(command.name, command.help, Usage(command), command.max_arguments, command.flags);
    }
    Add("help", "print the commands, or one command's help", "help [COMMAND]", 1, {});
    if (mode == LineMode::kProgram) {
      Add("ingest", "load a vector file into a collection", IngestUsage(), 1, IngestFlags());
      Add("offline", "inspect a data directory without a server", OfflineUsage(), 1,
          OfflineFlags());
    }
  }

  void Add(const std::string& name, const std::string& help, const std::string& usage, size_t max,
           const std::vector<Flag>& flags) {
    AddSubcommand(&root, name, help, usage, max, flags);
    max_arguments[name] = max;
  }

  std::string HelpHint(const std::string& command) const {
    const std::string prefix = mode == LineMode::kProgram ? "shoal " : "";
    return command.empty() ? absl::StrCat("see `", prefix, "--help`")
                           : absl::StrCat("see `", prefix, command, " --help`");
  }

  // The command (or the top level) as it was selected, its flags and arguments.
  absl::StatusOr<CommandLine> Collect() const {
    CommandLine line;
    const CLI::App* sub = root.get_subcommands().empty() ? nullptr : root.get_subcommands()[0];
    const std::string command = sub == nullptr ? "" : sub->get_name();
    std::vector<std::string> extras = root.remaining(/*recurse=*/true);
    if (!extras.empty()) {
      const std::string& word = extras[0];
      if (word.starts_with("-") && word.size() > 1) {
        return UsageError(absl::StrCat(command.empty() ? "" : command + ": ", "unknown flag ", word,
                                       Suggestion(sub != nullptr ? sub : &root, word), "; ",
                                       HelpHint(command)));
      }
      if (sub == nullptr) {
        return UsageError(
            absl::StrCat("unknown command \"", word, "\"; ", HelpHint(""), " for the commands"));
      }
      return UsageError(
          absl::StrCat(command, ": unexpected argument \"", word, "\"; ", HelpHint(command)));
    }
    if (!command.empty()) line.args.positional.push_back(command);
    for (const CLI::App* app : {&root, sub}) {
      if (app == nullptr) continue;
      for (const CLI::Option* option : app->get_options()) {
        if (option->count() == 0) continue;
        if (option->get_positional()) {
          const std::vector<std::string>& words = option->results();
          const size_t most = max_arguments.at(command);
          if (words.size() > most) {
            return UsageError(absl::StrCat(command, ": unexpected argument \"", words[most], "\"; ",
                                           HelpHint(command)));
          }
          line.args.positional.insert(line.args.positional.end(), words.begin(), words.end());
        } else {
          line.args.flags[option->get_lnames()[0]] =
              option->get_expected_min() == 0 ? "" : option->results().back();
        }
      }
    }
    if (command == "help") {
      line.action = CommandLine::Action::kPrint;
      line.text = HelpFor(line.args.positional.size() > 1 ? line.args.positional[1] : "");
    }
    return line;
  }

  // `help`: every command (and, for the program, the global flags); `help NAME`: NAME's help.
  std::string HelpFor(const std::string& name) const {
    if (!name.empty()) {
      for (const CLI::App* sub : root.get_subcommands({})) {
        if (sub->get_name() == name) return sub->help(mode == LineMode::kProgram ? "shoal" : "");
      }
      return absl::StrCat("unknown command \"", name, "\"\n");
    }
    std::string out;
    if (mode == LineMode::kProgram) {
      out = R"(usage: shoal [GLOBAL FLAGS] [COMMAND ARGS...]
  without a command: an interactive shell on a terminal, else one command per line from stdin
Global flags:
)";
      std::vector<Flag> globals = ConnectionFlags();
      globals.insert(globals.begin(), kOutputFlag);
      for (const Flag& flag : globals) {
        absl::StrAppend(&out, "  --", flag.name, flag.value ? absl::StrCat(" ", flag.value) : "",
                        "\n      ", flag.help, "\n");
      }
      absl::StrAppend(&out, "  --version\n      print the version and exit\n",
                      "The API key is read from $SHOAL_API_KEY (sent as \"authorization: Bearer "
                      "<key>\").\nCommands (also in the shell; COMMAND --help for one):\n");
    }
    return out + HelpText();
  }
};

CommandLine Print(std::string text) {
  CommandLine line;
  line.action = CommandLine::Action::kPrint;
  line.text = std::move(text);
  return line;
}

}  // namespace

std::string VersionLine(const std::string& program) {
  return absl::StrCat(program, " ", base::VersionText(), "\n");
}

absl::StatusOr<CommandLine> ParseCommandLine(std::span<const std::string> words, LineMode mode) {
  Parser parser(mode);
  try {
    parser.root.parse(std::vector<std::string>(words.rbegin(), words.rend()));
  } catch (const CLI::CallForHelp&) {
    const auto& selected = parser.root.get_subcommands();
    return Print(parser.HelpFor(selected.empty() ? "" : selected[0]->get_name()));
  } catch (const CLI::CallForVersion& version) {
    return Print(version.what());
  } catch (const CLI::ParseError& error) {
    const auto& selected = parser.root.get_subcommands();
    const std::string command = selected.empty() ? "" : selected[0]->get_name();
    return UsageError(absl::StrCat(command.empty() ? "" : command + ": ", error.what(), "; ",
                                   parser.HelpHint(command)));
  }
  return parser.Collect();
}

}  // namespace shoal::cli
