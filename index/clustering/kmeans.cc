// KMeans: sampling, seeding, Lloyd iterations with SPANN's balance penalty, lambda search.
// Every step is sequential except assignment (the backend's, deterministic per point), so the
// result does not depend on the thread count.
#include "index/clustering/kmeans.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "index/distance/distance.h"

namespace shoal::index {
namespace {

// k-means++ seeding costs pool * k * d flops; above this budget the pool shrinks, and below
// two points per centroid seeding falls back to random.
constexpr double kSeedingBudget = 1 << 30;
// Lambda candidates, in units of (mean squared distance) / (mean cluster size): with factor 1
// an average-sized cluster costs one mean distance extra.
constexpr float kLambdaFactors[] = {0.0f, 0.03f, 0.1f, 0.3f};
constexpr uint32_t kTrialIterations = 3;
// The penalty follows an exponential average of past sizes: with the raw previous sizes a
// strong penalty makes sizes oscillate (big clusters empty out, then refill).
constexpr double kDamping = 0.5;

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  // Uniform in [0, n); the modulo bias is irrelevant at these ranges and the result is the
  // same on every standard library (std::uniform_int_distribution is not).
  size_t Below(size_t n) { return static_cast<size_t>(engine_() % n); }
  double Unit() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

 private:
  std::mt19937_64 engine_;
};

// `count` distinct indices of [0, n) in random order (partial Fisher-Yates).
std::vector<uint32_t> Choose(size_t n, size_t count, Rng& rng) {
  std::vector<uint32_t> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = static_cast<uint32_t>(i);
  for (size_t i = 0; i < count; ++i) std::swap(all[i], all[i + rng.Below(n - i)]);
  all.resize(count);
  return all;
}

absl::Status Validate(const float* x, size_t n, size_t d, const KMeansOptions& options) {
  if (options.k == 0) return absl::InvalidArgumentError("k: must be positive");
  if (options.k > n) {
    return absl::InvalidArgumentError(absl::StrCat("k: ", options.k, " > n = ", n, " points"));
  }
  if (d == 0) return absl::InvalidArgumentError("d: must be positive");
  if (x == nullptr) return absl::InvalidArgumentError("points: null");
  for (size_t i = 0; i < n * d; ++i) {
    if (!std::isfinite(x[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("points[", i / d, "][", i % d, "]: ", x[i], " is not finite"));
    }
  }
  return absl::OkStatus();
}

// Lloyd iterations over one point set (the sample).
class Lloyd {
 public:
  Lloyd(ClusteringBackend& backend, const float* x, size_t n, size_t d, size_t k)
      : backend_(&backend),
        x_(x),
        n_(n),
        d_(d),
        k_(k),
        labels_(n),
        dists_(n),
        sizes_(k, 0),
        retained_(backend.AssignsOnDevice(n, k, d, 1) ? backend.RetainPoints(x, n, d) : nullptr) {}

  std::vector<float>& centroids() { return centroids_; }
  const std::vector<uint32_t>& sizes() const { return sizes_; }
  const std::vector<double>& penalty_sizes() const { return penalty_sizes_; }
  double objective() const { return objective_; }

  // Assigns every point with bias lambda * (damped sizes of the previous assignments).
  absl::Status Assign(float lambda) {
    std::vector<float> bias;
    if (lambda > 0 && assigned_) {
      bias.resize(k_);
      for (size_t c = 0; c < k_; ++c) bias[c] = lambda * static_cast<float>(penalty_sizes_[c]);
    }
    SHOAL_RETURN_IF_ERROR(backend_->AssignTopM(x_, n_, centroids_.data(), k_, d_, 1,
                                               bias.empty() ? nullptr : bias.data(), labels_.data(),
                                               dists_.data()));
    std::fill(sizes_.begin(), sizes_.end(), 0);
    objective_ = 0;
    for (size_t i = 0; i < n_; ++i) {
      ++sizes_[labels_[i]];
      objective_ += dists_[i];
    }
    penalty_sizes_.resize(k_);
    for (size_t c = 0; c < k_; ++c) {
      penalty_sizes_[c] =
          assigned_ ? kDamping * sizes_[c] + (1 - kDamping) * penalty_sizes_[c] : sizes_[c];
    }
    assigned_ = true;
    return absl::OkStatus();
  }

  // Centroids = means of their points (the backend's); empty clusters take the farthest point
  // of the largest.
  absl::Status Update() {
    SHOAL_RETURN_IF_ERROR(
        backend_->UpdateCentroids(x_, n_, d_, labels_.data(), k_, centroids_.data(), nullptr));
    for (size_t e = 0; e < k_; ++e) {
      if (sizes_[e] == 0) Reseed(e);
    }
    return absl::OkStatus();
  }

  absl::Status Run(uint32_t iterations, float lambda) {
    for (uint32_t it = 0; it < iterations; ++it) {
      SHOAL_RETURN_IF_ERROR(Assign(lambda));
      SHOAL_RETURN_IF_ERROR(Update());
    }
    return absl::OkStatus();
  }

  double SizeSpread() const {
    const double mean = static_cast<double>(n_) / k_;
    double var = 0;
    for (uint32_t s : sizes_) var += (s - mean) * (s - mean);
    return std::sqrt(var / k_) / mean;
  }

 private:
  void Reseed(size_t empty) {
    const size_t big = std::max_element(sizes_.begin(), sizes_.end()) - sizes_.begin();
    size_t far = n_;
    for (size_t i = 0; i < n_; ++i) {
      if (labels_[i] == big && (far == n_ || dists_[i] > dists_[far])) far = i;
    }
    if (far == n_ || sizes_[big] < 2) return;
    std::memcpy(&centroids_[empty * d_], x_ + far * d_, d_ * sizeof(float));
    labels_[far] = static_cast<uint32_t>(empty);
    dists_[far] = 0;
    --sizes_[big];
    sizes_[empty] = 1;
  }

  ClusteringBackend* backend_;
  const float* x_;
  size_t n_, d_, k_;
  std::vector<float> centroids_;
  std::vector<uint32_t> labels_;
  std::vector<float> dists_;
  std::vector<uint32_t> sizes_;
  std::vector<double> penalty_sizes_;
  double objective_ = 0;
  bool assigned_ = false;
  std::shared_ptr<const void> retained_;  // the backend's device copy of x_, if any
};

// k-means++ (D^2 sampling) over a random pool of the sample when affordable, else k random
// distinct sample points.
std::vector<float> Seed(const float* x, size_t n, size_t d, size_t k, Rng& rng) {
  std::vector<float> centroids(k * d);
  const size_t pool = std::min<size_t>(n, std::max<double>(k, kSeedingBudget / (double(k) * d)));
  if (pool < 2 * k) {
    const std::vector<uint32_t> pick = Choose(n, k, rng);
    for (size_t c = 0; c < k; ++c) {
      std::memcpy(&centroids[c * d], x + size_t{pick[c]} * d, d * sizeof(float));
    }
    return centroids;
  }
  const std::vector<uint32_t> ids = Choose(n, pool, rng);
  std::vector<float> nearest(pool, std::numeric_limits<float>::infinity());
  size_t chosen = rng.Below(pool);
  for (size_t c = 0; c < k; ++c) {
    const float* pick = x + size_t{ids[chosen]} * d;
    std::memcpy(&centroids[c * d], pick, d * sizeof(float));
    double total = 0;
    for (size_t i = 0; i < pool; ++i) {
      nearest[i] = std::min(nearest[i], L2Sqr(x + size_t{ids[i]} * d, pick, d));
      total += nearest[i];
    }
    if (total <= 0) {
      chosen = rng.Below(pool);
      continue;
    }
    const double target = rng.Unit() * total;
    double run = 0;
    chosen = pool - 1;
    for (size_t i = 0; i < pool; ++i) {
      run += nearest[i];
      if (run > target && nearest[i] > 0) {
        chosen = i;
        break;
      }
    }
  }
  return centroids;
}

// The size spread of the assignment that would follow `lloyd`'s state, leaving the state as it is.
absl::StatusOr<double> SpreadOfNextAssignment(const Lloyd& lloyd, float lambda) {
  Lloyd probe = lloyd;
  SHOAL_RETURN_IF_ERROR(probe.Assign(lambda));
  return probe.SizeSpread();
}

// SPANN's lambda search, from `lloyd`'s state (one plain iteration done). Each lambda factor runs
// a few iterations; the one whose sizes spread least (ties: the smaller lambda) runs on to the
// end beside plain k-means, and the penalty is kept only if it still spreads less then: a
// penalty that looks better after a few iterations can settle in a worse local optimum. Returns
// the chosen lambda and leaves `lloyd` at the end of its run.
absl::StatusOr<float> RunWithChosenLambda(Lloyd& lloyd, size_t n, size_t k, uint32_t iterations) {
  const uint32_t trial_iterations = std::min(iterations, kTrialIterations);
  const double mean_dist = lloyd.objective() / n;
  const double mean_size = static_cast<double>(n) / k;
  static_assert(kLambdaFactors[0] == 0, "trials[0] is plain k-means");
  std::vector<Lloyd> trials;
  std::vector<float> lambdas;
  size_t best = 0;
  double best_spread = std::numeric_limits<double>::infinity();
  for (float factor : kLambdaFactors) {
    lambdas.push_back(static_cast<float>(factor * mean_dist / mean_size));
    Lloyd& trial = trials.emplace_back(lloyd);
    SHOAL_RETURN_IF_ERROR(trial.Run(trial_iterations, lambdas.back()));
    SHOAL_ASSIGN_OR_RETURN(const double spread, SpreadOfNextAssignment(trial, lambdas.back()));
    if (spread < best_spread) {
      best_spread = spread;
      best = trials.size() - 1;
    }
  }
  const uint32_t rest = iterations - trial_iterations;
  SHOAL_RETURN_IF_ERROR(trials[0].Run(rest, 0));
  if (best != 0) {
    SHOAL_RETURN_IF_ERROR(trials[best].Run(rest, lambdas[best]));
    SHOAL_ASSIGN_OR_RETURN(const double penalised,
                           SpreadOfNextAssignment(trials[best], lambdas[best]));
    SHOAL_ASSIGN_OR_RETURN(const double unpenalised, SpreadOfNextAssignment(trials[0], 0));
    if (penalised < unpenalised) {
      lloyd = std::move(trials[best]);
      return lambdas[best];
    }
  }
  lloyd = std::move(trials[0]);
  return 0.0f;
}

}  // namespace

absl::Status ClusteringBackend::UpdateCentroids(const float* points, size_t n, size_t d,
                                                const uint32_t* labels, size_t k, float* centroids,
                                                uint32_t* sizes) {
  if (k == 0) return absl::InvalidArgumentError("k: need at least one centroid");
  if (d == 0) return absl::InvalidArgumentError("d: must be positive");
  if (centroids == nullptr || (n > 0 && (points == nullptr || labels == nullptr))) {
    return absl::InvalidArgumentError("points, labels and centroids must not be null");
  }
  std::vector<double> sums(k * d, 0.0);
  std::vector<uint32_t> counts(k, 0);
  for (size_t i = 0; i < n; ++i) {
    if (labels[i] >= k) {
      return absl::InvalidArgumentError(
          absl::StrCat("labels[", i, "]: ", labels[i], " is not a centroid index < k = ", k));
    }
    double* s = &sums[size_t{labels[i]} * d];
    const float* p = points + i * d;
    for (size_t j = 0; j < d; ++j) s[j] += p[j];
    ++counts[labels[i]];
  }
  for (size_t c = 0; c < k; ++c) {
    if (counts[c] == 0) continue;
    for (size_t j = 0; j < d; ++j) {
      centroids[c * d + j] = static_cast<float>(sums[c * d + j] / counts[c]);
    }
  }
  if (sizes != nullptr) std::copy(counts.begin(), counts.end(), sizes);
  return absl::OkStatus();
}

absl::StatusOr<KMeansResult> KMeans(ClusteringBackend& backend, const float* x, size_t n, size_t d,
                                    const KMeansOptions& options) {
  SHOAL_RETURN_IF_ERROR(Validate(x, n, d, options));
  const size_t k = options.k;
  Rng rng(options.seed);
  const size_t max_sample = options.max_sample != 0 ? options.max_sample : 256 * k;
  const size_t s = std::clamp(max_sample, k, n);
  std::vector<float> sample_rows;
  const float* sample = x;
  if (s < n) {
    std::vector<uint32_t> ids = Choose(n, s, rng);
    std::sort(ids.begin(), ids.end());
    sample_rows.resize(s * d);
    for (size_t i = 0; i < s; ++i) {
      std::memcpy(&sample_rows[i * d], x + size_t{ids[i]} * d, d * sizeof(float));
    }
    sample = sample_rows.data();
  }

  Lloyd lloyd(backend, sample, s, d, k);
  lloyd.centroids() = Seed(sample, s, d, k, rng);
  float lambda = std::max(options.lambda, 0.0f);
  if (options.lambda < 0 && options.iterations > 0) {
    SHOAL_RETURN_IF_ERROR(lloyd.Run(1, 0));
    SHOAL_ASSIGN_OR_RETURN(lambda, RunWithChosenLambda(lloyd, s, k, options.iterations - 1));
  } else {
    SHOAL_RETURN_IF_ERROR(lloyd.Run(options.iterations, lambda));
  }

  KMeansResult result;
  result.lambda = lambda;
  result.centroids = std::move(lloyd.centroids());
  result.labels.resize(n);
  std::vector<float> dists(n);
  std::vector<float> bias;
  if (lambda > 0 && options.iterations > 0) {
    bias.resize(k);
    for (size_t c = 0; c < k; ++c) {
      bias[c] = lambda * static_cast<float>(lloyd.penalty_sizes()[c]);
    }
  }
  SHOAL_RETURN_IF_ERROR(backend.AssignTopM(x, n, result.centroids.data(), k, d, 1,
                                           bias.empty() ? nullptr : bias.data(),
                                           result.labels.data(), dists.data()));
  result.sizes.assign(k, 0);
  for (size_t i = 0; i < n; ++i) {
    ++result.sizes[result.labels[i]];
    result.objective += dists[i];
  }
  return result;
}

}  // namespace shoal::index
