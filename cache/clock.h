// Clock: the time seam of the semantic cache. Entry ages, TTLs and expiry read it; tests pass a
// FakeClock and move time by hand, so "expires exactly at TTL" is checked to the microsecond.
//
//   cache::FakeClock clock(/*start_micros=*/1'000'000);
//   ... store an entry with a 60 s TTL ...
//   clock.AdvanceMicros(60'000'000 - 1);  // still served
//   clock.AdvanceMicros(1);               // expired: never served again
//
// Thread safety: NowMicros may be called from any thread; FakeClock's setters too.
#ifndef SHOAL_CACHE_CLOCK_H_
#define SHOAL_CACHE_CLOCK_H_

#include <atomic>
#include <cstdint>

namespace shoal::cache {

class Clock {
 public:
  virtual ~Clock() = default;
  // Microseconds since the Unix epoch (wall time: entry times are stored and survive restarts).
  virtual int64_t NowMicros() const = 0;
};

// The process's wall clock (std::chrono::system_clock). Never destroyed.
const Clock* SystemClock();

class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t start_micros = 1'700'000'000'000'000) : now_(start_micros) {}
  int64_t NowMicros() const override { return now_.load(); }
  void SetMicros(int64_t now) { now_.store(now); }
  void AdvanceMicros(int64_t delta) { now_.fetch_add(delta); }
  void AdvanceSeconds(double seconds) { AdvanceMicros(static_cast<int64_t>(seconds * 1e6)); }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace shoal::cache

#endif  // SHOAL_CACHE_CLOCK_H_
