// RunOnThreads: fn(t) for t in [0, threads) on that many threads, the calling thread taking t = 0;
// returns when every one has. threads = 0 runs fn(0) alone.
//
//   base::RunOnThreads(threads, [&](size_t t) { Work(n * t / threads, n * (t + 1) / threads); });
#ifndef SHOAL_BASE_RUN_ON_THREADS_H_
#define SHOAL_BASE_RUN_ON_THREADS_H_

#include <cstddef>
#include <thread>
#include <vector>

namespace shoal::base {

template <typename Fn>
void RunOnThreads(size_t threads, const Fn& fn) {
  std::vector<std::thread> workers;
  for (size_t t = 1; t < threads; ++t) workers.emplace_back([&fn, t] { fn(t); });
  fn(0);
  for (std::thread& w : workers) w.join();
}

}  // namespace shoal::base

#endif  // SHOAL_BASE_RUN_ON_THREADS_H_
