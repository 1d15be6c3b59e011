#include "cli/ingest.h"

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <deque>
#include <iostream>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "cli/commands_internal.h"
#include "cli/ingest_checkpoint.h"
#include "cli/ingest_pipeline.h"
#include "cli/ingest_sender.h"
#include "cli/ingest_source.h"
#include "cli/progress.h"

namespace shoal::cli {
namespace {

namespace v1 = ::shoal::v1;

// "records[3].vector[5]: NaN" from the server -> "FILE: record <first + 3>: vector[5]: NaN".
absl::Status NameRecord(const absl::Status& status, const std::string& file, uint64_t first) {
  const std::string message(status.message());
  const std::string prefix = "records[";
  size_t at = message.find(prefix);
  size_t close = at == std::string::npos ? at : message.find(']', at);
  uint64_t index = 0;
  if (close == std::string::npos ||
      !absl::SimpleAtoi(message.substr(at + prefix.size(), close - at - prefix.size()), &index)) {
    return absl::Status(status.code(), absl::StrCat(file, ": rows from ", first, ": ", message));
  }
  std::string rest = message.substr(close + 1);
  if (!rest.empty() && rest[0] == '.') rest = rest.substr(1);
  return absl::Status(status.code(), absl::StrCat(file, ": record ", first + index, ": ",
                                                  message.substr(0, at), rest));
}

// Makes sure the collection exists with the file's dimension.
absl::Status PrepareCollection(const Connection& c, const IngestOptions& o, size_t cols) {
  if (o.dimension != 0 && o.dimension != cols) {
    return absl::InvalidArgumentError(absl::StrCat("--dimension: ", o.dimension, " but ", o.file,
                                                   " has ", cols, " values per record"));
  }
  v1::DescribeCollectionRequest describe;
  describe.set_name(o.collection);
  v1::DescribeCollectionResponse info;
  absl::Status found =
      FromGrpc(c.collections().DescribeCollection(c.Context().get(), describe, &info));
  if (absl::IsNotFound(found) && o.create) {
    SHOAL_ASSIGN_OR_RETURN(v1::Metric metric, ParseMetric(o.metric));
    v1::CreateCollectionRequest create;
    create.mutable_spec()->set_name(o.collection);
    create.mutable_spec()->set_dimension(static_cast<uint32_t>(cols));
    create.mutable_spec()->set_metric(metric);
    v1::CreateCollectionResponse created;
    absl::Status s =
        FromGrpc(c.collections().CreateCollection(c.Context().get(), create, &created));
    if (!absl::IsAlreadyExists(s)) return s;  // a concurrent create is fine: check it below
    found = FromGrpc(c.collections().DescribeCollection(c.Context().get(), describe, &info));
  }
  if (absl::IsNotFound(found)) {
    return absl::NotFoundError(
        absl::StrCat("--collection: ", found.message(), " (add --create to create it)"));
  }
  SHOAL_RETURN_IF_ERROR(found);
  if (info.collection().spec().dimension() != cols) {
    return absl::InvalidArgumentError(
        absl::StrCat(o.file, ": ", cols, " values per record, but collection '", o.collection,
                     "' has dimension ", info.collection().spec().dimension()));
  }
  return absl::OkStatus();
}

// Reads rows [start, rows) into batches; runs on its own thread.
void ReadBatches(RowSource& source, const IngestOptions& o, uint64_t start, uint64_t rows,
                 Pipeline& pipeline) {
  const size_t cols = source.cols();
  std::vector<float> values;
  const absl::Time began = absl::Now();
  for (uint64_t first = start; first < rows; first += o.batch) {
    const size_t count = static_cast<size_t>(std::min<uint64_t>(o.batch, rows - first));
    values.resize(count * cols);
    if (absl::Status s = source.ReadRows(first, count, absl::MakeSpan(values)); !s.ok()) {
      pipeline.Fail(s);
      break;
    }
    Batch batch{.first = first};
    batch.request.set_collection(o.collection);
    batch.request.set_sync(o.sync);
    batch.request.set_tenant(o.tenant);
    for (size_t r = 0; r < count; ++r) {
      const float* row = values.data() + r * cols;
      for (size_t j = 0; j < cols; ++j) {
        if (!std::isfinite(row[j])) {
          pipeline.Fail(absl::InvalidArgumentError(
              absl::StrCat(source.path(), ": record ", first + r, ": value ", j, " is ", row[j])));
          pipeline.Close();
          return;
        }
      }
      v1::Record* record = batch.request.add_records();
      if (o.key_prefix.empty()) {
        record->mutable_key()->set_id(o.key_offset + first + r);
      } else {
        record->mutable_key()->set_name(absl::StrCat(o.key_prefix, first + r));
      }
      record->mutable_vector()->Add(row, row + cols);
    }
    if (o.max_rate > 0) {
      absl::SleepFor(began + absl::Seconds((first + count - start) / o.max_rate) - absl::Now());
    }
    if (!pipeline.Push(std::move(batch))) break;
  }
  pipeline.Close();
}

}  // namespace

absl::StatusOr<IngestResult> Ingest(const Connection& c, const IngestOptions& o) {
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<RowSource> source, OpenRowSource(o.file, o.format));
  SHOAL_RETURN_IF_ERROR(PrepareCollection(c, o, source->cols()));
  const uint64_t rows = std::min<uint64_t>(source->rows(), o.limit);
  Checkpoint checkpoint{.file = o.file,
                        .collection = o.collection,
                        .key_prefix = o.key_prefix,
                        .key_offset = o.key_offset,
                        .rows = rows};
  if (!o.checkpoint.empty()) {
    SHOAL_ASSIGN_OR_RETURN(std::optional<Checkpoint> saved, LoadCheckpoint(o.checkpoint));
    if (saved.has_value()) {
      const std::string mismatch = saved->Mismatch(checkpoint);
      if (mismatch.empty()) {
        checkpoint.done = saved->done;
      } else if (!o.restart) {
        return absl::FailedPreconditionError(absl::StrCat("--checkpoint: ", o.checkpoint,
                                                          " belongs to another ingest (", mismatch,
                                                          "); pass --restart to start over"));
      }
    }
  }
  IngestResult result{.rows = rows, .resumed = checkpoint.done};
  const absl::Time began = absl::Now();
  AckedPrefix acked(checkpoint.done);
  ProgressBar progress(rows, checkpoint.done, o.progress);
  Pipeline pipeline(2 * static_cast<size_t>(o.streams) * (o.use_stream ? o.window : 1));
  std::atomic<uint64_t> sent{0};
  std::atomic<uint64_t> backoffs{0};
  std::atomic<int> senders_left{o.streams};

  std::thread reader([&] { ReadBatches(*source, o, checkpoint.done, rows, pipeline); });
  std::vector<std::thread> senders;
  for (int i = 0; i < o.streams; ++i) {
    senders.emplace_back([&] {
      std::unique_ptr<BatchSender> sender =
          o.use_stream ? NewStreamSender(c, o.window) : NewUpsertSender(c);
      uint64_t failed_first = UINT64_MAX;
      absl::Status s = sender->Run(
          pipeline,
          [&](uint64_t first, uint64_t count) {
            sent += count;
            progress.Update(acked.Ack(first, count));
          },
          &failed_first);
      if (!s.ok()) {
        pipeline.Fail(failed_first == UINT64_MAX ? s : NameRecord(s, o.file, failed_first));
      }
      backoffs += sender->backoffs();
      --senders_left;
    });
  }
  // Save the checkpoint while the batches flow (and once more at the end).
  absl::Status saved;
  uint64_t saved_done = checkpoint.done;
  while (senders_left > 0) {
    absl::SleepFor(absl::Milliseconds(200));
    if (!o.checkpoint.empty() && acked.done() != saved_done && saved.ok()) {
      checkpoint.done = saved_done = acked.done();
      saved = SaveCheckpoint(o.checkpoint, checkpoint);
    }
  }
  reader.join();
  for (std::thread& t : senders) t.join();
  checkpoint.done = acked.done();
  if (!o.checkpoint.empty() && saved.ok()) saved = SaveCheckpoint(o.checkpoint, checkpoint);
  progress.Finish(checkpoint.done);
  SHOAL_RETURN_IF_ERROR(pipeline.error());
  SHOAL_RETURN_IF_ERROR(saved);
  result.sent = sent;
  result.backoffs = backoffs;
  result.seconds = absl::ToDoubleSeconds(absl::Now() - began);
  return result;
}

std::string IngestUsage() {
  return "ingest FILE --collection NAME [--create [--dimension D] [--metric l2|ip|cosine]]"
         " [--format auto] [--batch N] [--streams P] [--checkpoint PATH [--restart]]"
         " [--key-prefix P | --key-offset N] [--limit N] [--max-rate ROWS_PER_S] [--sync]"
         " [--tenant T]"
         " [--rpc ingest|upsert] [--window W] [--no-progress]";
}

const std::vector<Flag>& IngestFlags() {
  static const std::vector<Flag> kFlags = {
      {"collection", "NAME", "the collection to load into (required)"},
      {"create", nullptr, "create the collection first (with --dimension, --metric)"},
      {"dimension", "D", "with --create: the dimension (default: the file's)"},
      {"metric", "l2|ip|cosine", "with --create: the metric (default l2)"},
      {"format", "FORMAT", "fvecs, bvecs, ivecs, fbin, u8bin, ibin, npy, idx, hdf5 (default auto)"},
      {"batch", "N", "records per batch (default 1000)"},
      {"streams", "P", "parallel streams (default 2)"},
      {"checkpoint", "PATH", "record progress here; rerunning continues after it"},
      {"restart", nullptr, "with --checkpoint: start over"},
      {"key-prefix", "P", "row r gets the string key P<r>"},
      {"key-offset", "N", "row r gets the key N+r (default 0)"},
      {"limit", "N", "send at most N rows"},
      {"max-rate", "ROWS_PER_S", "send at most this many rows per second"},
      {"sync", nullptr, "make every batch durable before it is acknowledged"},
      {"tenant", "T", "the tenant that owns the records (default: the API key's own, if bound)"},
      {"rpc", "ingest|upsert", "the streaming Ingest RPC (default) or plain Upsert calls"},
      {"window", "W", "batches in flight per stream (default 4)"},
      {"no-progress", nullptr, "no progress line on a terminal"},
  };
  return kFlags;
}

absl::StatusOr<IngestOptions> ParseIngestOptions(const Args& args) {
  if (args.positional.size() != 2) return UsageError(absl::StrCat("usage: ", IngestUsage()));
  IngestOptions o;
  o.file = args.positional[1];
  o.collection = args.Get("collection", "");
  if (o.collection.empty()) return UsageError("--collection: required");
  o.format = args.Get("format", "auto");
  o.create = args.Has("create");
  SHOAL_ASSIGN_OR_RETURN(uint64_t dimension, args.GetUint("dimension", 0, UINT32_MAX));
  o.dimension = static_cast<uint32_t>(dimension);
  o.metric = args.Get("metric", "l2");
  SHOAL_ASSIGN_OR_RETURN(o.batch, args.GetUint("batch", 1000, 1000000));
  SHOAL_ASSIGN_OR_RETURN(uint64_t streams, args.GetUint("streams", 2, 64));
  if (o.batch == 0) return UsageError("--batch: must be at least 1");
  if (streams == 0) return UsageError("--streams: must be at least 1");
  o.streams = static_cast<int>(streams);
  o.sync = args.Has("sync");
  o.tenant = args.Get("tenant", "");
  o.checkpoint = args.Get("checkpoint", "");
  o.restart = args.Has("restart");
  o.key_prefix = args.Get("key-prefix", "");
  SHOAL_ASSIGN_OR_RETURN(o.key_offset, args.GetUint("key-offset", 0));
  SHOAL_ASSIGN_OR_RETURN(o.limit, args.GetUint("limit", UINT64_MAX));
  SHOAL_ASSIGN_OR_RETURN(o.max_rate, args.GetDouble("max-rate", 0));
  const std::string rpc = args.Get("rpc", "ingest");
  if (rpc != "ingest" && rpc != "upsert") {
    return UsageError("--rpc: must be ingest or upsert");
  }
  o.use_stream = rpc == "ingest";
  SHOAL_ASSIGN_OR_RETURN(uint64_t window, args.GetUint("window", 4, 64));
  if (window == 0) return UsageError("--window: must be at least 1");
  o.window = static_cast<int>(window);
  o.progress = isatty(STDERR_FILENO) && !args.Has("no-progress");
  return o;
}

int RunIngest(const Connection& connection, const Args& args) {
  absl::StatusOr<IngestOptions> options = ParseIngestOptions(args);
  absl::StatusOr<IngestResult> result =
      options.ok() ? Ingest(connection, *options) : options.status();
  if (!result.ok()) {
    std::cerr << "error: " << ErrorText(result.status()) << "\n";
    return options.ok() ? 1 : 2;
  }
  const double rate = result->seconds > 0 ? result->sent / result->seconds : 0;
  Table t{.columns = {"collection", "rows", "resumed_from", "sent", "seconds", "rows_per_s",
                      "backoffs"},
          .single = true};
  t.rows.push_back({Cell::Text(options->collection), Cell::Number(result->rows),
                    Cell::Number(result->resumed), Cell::Number(result->sent),
                    Cell::Seconds(result->seconds), Cell::Number(rate),
                    Cell::Number(result->backoffs)});
  absl::StatusOr<OutputFormat> format =
      ParseOutputFormat(args.Get("output", isatty(STDOUT_FILENO) ? "table" : "json"));
  std::cout << Render(t, format.ok() ? *format : OutputFormat::kJson);
  return 0;
}

}  // namespace shoal::cli
