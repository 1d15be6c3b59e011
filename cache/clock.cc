#include "cache/clock.h"

#include <chrono>

namespace shoal::cache {
namespace {

class WallClock final : public Clock {
 public:
  int64_t NowMicros() const override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace

const Clock* SystemClock() {
  static const WallClock* clock = new WallClock();
  return clock;
}

}  // namespace shoal::cache
