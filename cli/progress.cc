#include "cli/progress.h"

#include <cstdio>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace shoal::cli {

ProgressBar::ProgressBar(uint64_t total, uint64_t start, bool enabled)
    : total_(total), start_(start), enabled_(enabled) {}

std::string ProgressBar::Line(uint64_t total, uint64_t start, uint64_t done,
                              absl::Duration elapsed) {
  constexpr int kWidth = 20;
  const double fraction = total == 0 ? 1.0 : static_cast<double>(done) / total;
  const int filled = static_cast<int>(fraction * kWidth);
  std::string bar = std::string(filled, '#') + std::string(kWidth - filled, '.');
  const double seconds = absl::ToDoubleSeconds(elapsed);
  const double rate = seconds > 0 ? (done - start) / seconds : 0;
  std::string eta = "?";
  if (rate > 0) eta = absl::StrFormat("%.0fs", (total - done) / rate);
  return absl::StrFormat("[%s] %d/%d rows %3.0f%% %.1fk rows/s ETA %s", bar, done, total,
                         fraction * 100, rate / 1000, eta);
}

void ProgressBar::Draw(uint64_t done) {
  std::fprintf(stderr, "\r%s\x1b[K", Line(total_, start_, done, absl::Now() - began_).c_str());
  std::fflush(stderr);
}

void ProgressBar::Update(uint64_t done) {
  if (!enabled_) return;
  absl::MutexLock lock(&mu_);
  const absl::Time now = absl::Now();
  if (now - last_draw_ < absl::Milliseconds(100)) return;
  last_draw_ = now;
  Draw(done);
}

void ProgressBar::Finish(uint64_t done) {
  if (!enabled_) return;
  absl::MutexLock lock(&mu_);
  Draw(done);
  std::fputc('\n', stderr);
}

}  // namespace shoal::cli
