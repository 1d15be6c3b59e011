#include "storage/dataset/embedding_synthetic.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <numeric>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace shoal::storage {
namespace {

constexpr uint64_t kMaxFloats = uint64_t{1} << 34;
constexpr uint32_t kMinIntrinsic = 4, kMaxIntrinsic = 64;
// Defaults of the spec keys `spread` (a sub-cluster's spread along its subspace) and `noise`
// (isotropic noise per dimension, relative to the spread), against sub-cluster centres 0.5 per
// dimension apart around their topic. Chosen for difficulty like the ann-benchmarks sets they
// stand in for, measured at n=50000 (docs/PERFORMANCE.md): euclidean (SIFT/GIST-like) hnswlib
// M=16 ef=10 reaches recall@10 0.82 and ef=40 0.97; angular (GloVe/NYTimes-like, harder)
// 0.65 and 0.88.
constexpr float kSpread = 1.5f, kNoiseEuclidean = 0.5f, kNoiseAngular = 1.0f;

// SplitMix64 with Box-Muller: the same numbers on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double Uniform() { return (static_cast<double>(Next() >> 11) + 1.0) * 0x1.0p-53; }
  float Normal() {
    const double u1 = Uniform(), u2 = Uniform();
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) *
                              std::cos(2.0 * std::numbers::pi * u2));
  }

 private:
  uint64_t state_;
};

struct Spec {
  uint64_t n = 100000, d = 128, q = 1000, seed = 1;
  double zipf = 1.0;
  double spread = kSpread;
  double noise = -1;  // < 0: by distance
  std::string distance = "angular";
};

absl::StatusOr<Spec> Parse(const std::string& text) {
  Spec s;
  absl::string_view rest = text;
  absl::ConsumePrefix(&rest, "embedding");
  absl::ConsumePrefix(&rest, ":");
  for (absl::string_view item : absl::StrSplit(rest, ',', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(item, '=');
    bool ok = false;
    if (kv.first == "distance") {
      ok = kv.second == "angular" || kv.second == "euclidean";
      s.distance = std::string(kv.second);
    } else if (kv.first == "zipf") {
      ok = absl::SimpleAtod(kv.second, &s.zipf) && s.zipf >= 0 && s.zipf <= 4;
    } else if (kv.first == "spread" || kv.first == "noise") {
      double* f = kv.first == "spread" ? &s.spread : &s.noise;
      ok = absl::SimpleAtod(kv.second, f) && *f >= 0 && *f <= 100;
    } else {
      uint64_t* f = kv.first == "n"      ? &s.n
                    : kv.first == "d"    ? &s.d
                    : kv.first == "q"    ? &s.q
                    : kv.first == "seed" ? &s.seed
                                         : nullptr;
      ok = f != nullptr && absl::SimpleAtoi(kv.second, f);
    }
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bad embedding spec '", text, "' at '", item,
          "' (keys: n, d, q, seed, zipf in 0..4, spread, noise, distance=angular|euclidean)"));
    }
  }
  if (s.noise < 0) s.noise = s.distance == "angular" ? kNoiseAngular : kNoiseEuclidean;
  if (s.n == 0 || s.d == 0 || s.d > 65536 || s.n > kMaxFloats / s.d || s.q > kMaxFloats / s.d) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad embedding spec '", text, "': need n >= 1, 1 <= d <= 65536"));
  }
  return s;
}

struct Cluster {
  std::vector<float> centre;
  uint32_t intrinsic = 0;
  std::vector<float> basis;  // d x intrinsic, column t scaled by (t+1)^-0.7
  float spread = 1;
  float noise = 0;
};

struct Mixture {
  size_t d = 0;
  std::vector<Cluster> clusters;
  std::vector<double> cumulative;  // of the Zipf weights, for sampling
  std::vector<float> mean;         // shared offset (angular sets)
};

Mixture MakeMixture(const Spec& s, Rng& rng) {
  Mixture m;
  m.d = s.d;
  const size_t d = s.d;
  // Decaying global spectrum: dimension j varies with scale (j+1)^-0.5 (normalised).
  std::vector<float> spectrum(d);
  for (size_t j = 0; j < d; ++j) spectrum[j] = std::pow(float(j + 1), -0.5f);
  const float norm = std::sqrt(std::accumulate(spectrum.begin(), spectrum.end(), 0.0f,
                                               [](float a, float x) { return a + x * x; }) /
                               float(d));
  for (float& x : spectrum) x /= norm;
  const size_t topics = std::clamp<size_t>(static_cast<size_t>(std::sqrt(s.n) / 8), 4, 64);
  const size_t per_topic = std::clamp<size_t>(static_cast<size_t>(std::sqrt(s.n) / 4), 2, 64);
  for (size_t t = 0; t < topics; ++t) {
    std::vector<float> topic(d);
    for (size_t j = 0; j < d; ++j) topic[j] = spectrum[j] * rng.Normal();
    for (size_t c = 0; c < per_topic; ++c) {
      Cluster cl;
      cl.centre.resize(d);
      for (size_t j = 0; j < d; ++j) cl.centre[j] = topic[j] + 0.5f * spectrum[j] * rng.Normal();
      const double lg =
          std::log(double(kMinIntrinsic)) +
          rng.Uniform() * (std::log(double(kMaxIntrinsic)) - std::log(double(kMinIntrinsic)));
      cl.intrinsic = std::min<uint32_t>(static_cast<uint32_t>(std::exp(lg)), d);
      cl.basis.resize(d * cl.intrinsic);
      for (size_t j = 0; j < d; ++j) {
        for (uint32_t a = 0; a < cl.intrinsic; ++a) {
          cl.basis[j * cl.intrinsic + a] =
              spectrum[j] * rng.Normal() * std::pow(float(a + 1), -0.7f) / std::sqrt(float(d));
        }
      }
      cl.spread = float(s.spread) * std::exp(0.35f * rng.Normal()) * std::sqrt(float(d) / 16.0f);
      cl.noise = float(s.noise) * cl.spread / std::sqrt(float(d) / 16.0f);
      m.clusters.push_back(std::move(cl));
    }
  }
  // Zipf weights by a random rank order: a few huge clusters, many tiny.
  std::vector<size_t> rank(m.clusters.size());
  for (size_t i = 0; i < rank.size(); ++i) rank[i] = i;
  for (size_t i = rank.size(); i > 1; --i) std::swap(rank[i - 1], rank[rng.Next() % i]);
  double total = 0;
  for (size_t i = 0; i < rank.size(); ++i) {
    total += std::pow(double(rank[i] + 1), -s.zipf);
    m.cumulative.push_back(total);
  }
  for (double& c : m.cumulative) c /= total;
  m.mean.assign(d, 0);
  if (s.distance == "angular") {
    for (size_t j = 0; j < d; ++j) m.mean[j] = 1.2f * spectrum[j] * std::abs(rng.Normal());
  }
  return m;
}

Matrix Sample(const Mixture& m, uint64_t rows, Rng& rng) {
  Matrix out;
  out.rows = rows;
  out.cols = m.d;
  out.data.resize(rows * m.d);
  std::vector<float> z(kMaxIntrinsic);
  for (uint64_t i = 0; i < rows; ++i) {
    const double u = rng.Uniform();
    const size_t c = std::min<size_t>(
        std::lower_bound(m.cumulative.begin(), m.cumulative.end(), u) - m.cumulative.begin(),
        m.clusters.size() - 1);
    const Cluster& cl = m.clusters[c];
    for (uint32_t a = 0; a < cl.intrinsic; ++a) z[a] = cl.spread * rng.Normal();
    float* row = out.data.data() + i * m.d;
    for (size_t j = 0; j < m.d; ++j) {
      float v = m.mean[j] + cl.centre[j] + cl.noise * rng.Normal();
      const float* b = cl.basis.data() + j * cl.intrinsic;
      for (uint32_t a = 0; a < cl.intrinsic; ++a) v += b[a] * z[a];
      row[j] = v;
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<AnnDataset> GenerateEmbeddingLike(const std::string& spec) {
  absl::StatusOr<Spec> parsed = Parse(spec);
  if (!parsed.ok()) return parsed.status();
  const Spec& s = *parsed;
  Rng rng(s.seed);
  const Mixture mixture = MakeMixture(s, rng);
  AnnDataset ds;
  ds.name = absl::StrCat("embedding-", s.distance, "-n", s.n, "-d", s.d, "-s", s.seed);
  Rng train_rng(rng.Next());
  Rng test_rng(rng.Next());
  ds.train = Sample(mixture, s.n, train_rng);
  ds.test = Sample(mixture, s.q, test_rng);
  ds.distance = s.distance;
  return ds;
}

}  // namespace shoal::storage
