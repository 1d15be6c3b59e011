#include "storage/dataset/synthetic.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace shoal::storage {
namespace {

// Each cluster's points spread about its centre with this per-dimension standard deviation
// (isotropic mode) or the same total spread along the cluster's own low-dimensional subspace.
constexpr float kClusterStddev = 0.3f;
// Isotropic noise added on top of the subspace spread (per dimension).
constexpr float kSubspaceNoiseStddev = 0.02f;
constexpr uint64_t kMaxFloats = uint64_t{1} << 34;  // 64 GiB of floats: surely a typo beyond

// SplitMix64: tiny, fast, and the same on every platform (std:: distributions are not).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1].
  double Uniform() { return (static_cast<double>(Next() >> 11) + 1.0) * 0x1.0p-53; }
  // Standard normal by Box-Muller (one value per call; the sine half is dropped for clarity).
  float Normal() {
    double u1 = Uniform(), u2 = Uniform();
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) *
                              std::cos(2.0 * std::numbers::pi * u2));
  }

 private:
  uint64_t state_;
};

struct SyntheticSpec {
  uint64_t n = 100000, d = 128, q = 1000, clusters = 100, seed = 1;
  // Dimension of the subspace each cluster's points spread along (0 = all d dimensions).
  uint64_t intrinsic = 16;
  std::string distance = "euclidean";
};

absl::StatusOr<SyntheticSpec> ParseSpec(const std::string& spec) {
  SyntheticSpec s;
  absl::string_view rest = spec;
  if (!absl::ConsumePrefix(&rest, "synthetic")) {
    return absl::InvalidArgumentError(absl::StrCat("bad synthetic spec '", spec, "'"));
  }
  absl::ConsumePrefix(&rest, ":");
  for (absl::string_view item : absl::StrSplit(rest, ',', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(item, '=');
    if (kv.first == "distance" && (kv.second == "euclidean" || kv.second == "angular")) {
      s.distance = std::string(kv.second);
      continue;
    }
    uint64_t value = 0;
    uint64_t* field = kv.first == "n"           ? &s.n
                      : kv.first == "d"         ? &s.d
                      : kv.first == "q"         ? &s.q
                      : kv.first == "clusters"  ? &s.clusters
                      : kv.first == "seed"      ? &s.seed
                      : kv.first == "intrinsic" ? &s.intrinsic
                                                : nullptr;
    if (field == nullptr || !absl::SimpleAtoi(kv.second, &value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad synthetic spec '", spec, "' at '", item,
                       "' (keys: n, d, q, clusters, seed, intrinsic, distance=euclidean|angular)"));
    }
    *field = value;
  }
  s.intrinsic = std::min(s.intrinsic, s.d);
  if (s.n == 0 || s.d == 0 || s.d > 65536 || s.clusters == 0 ||
      s.clusters > kMaxFloats / (s.d * std::max<uint64_t>(s.intrinsic, 1)) ||
      s.n > kMaxFloats / s.d || s.q > kMaxFloats / s.d) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad synthetic spec '", spec, "': need n >= 1, 1 <= d <= 65536, clusters >= 1, and ",
        "n*d, q*d at most ", kMaxFloats));
  }
  return s;
}

// Per cluster: its centre and (intrinsic > 0) a d x intrinsic basis of random directions of unit
// expected length. Real embedding sets have a low intrinsic dimension (SIFT's is about 16); with
// full-rank isotropic noise (intrinsic = 0) nearest neighbours inside a cluster are as
// structureless as uniform random data, which no partition index can search without scanning
// most of the cluster.
struct Clusters {
  Matrix centres;
  uint64_t intrinsic = 0;
  std::vector<float> bases;  // clusters x d x intrinsic
};

Matrix Sample(const Clusters& c, uint64_t rows, Rng& rng) {
  Matrix m;
  m.rows = rows;
  m.cols = c.centres.cols;
  m.data.resize(rows * m.cols);
  const size_t d = m.cols, r = c.intrinsic;
  const float z_stddev = r == 0 ? 0 : kClusterStddev * std::sqrt(float(d) / float(r));
  std::vector<float> z(r);
  for (uint64_t i = 0; i < rows; ++i) {
    const uint64_t k = rng.Next() % c.centres.rows;
    const float* centre = c.centres.Row(k);
    float* row = m.data.data() + i * m.cols;
    if (r == 0) {
      for (size_t j = 0; j < d; ++j) row[j] = centre[j] + kClusterStddev * rng.Normal();
      continue;
    }
    for (float& x : z) x = z_stddev * rng.Normal();
    const float* basis = c.bases.data() + k * d * r;
    for (size_t j = 0; j < d; ++j) {
      float v = centre[j] + kSubspaceNoiseStddev * rng.Normal();
      for (size_t t = 0; t < r; ++t) v += basis[j * r + t] * z[t];
      row[j] = v;
    }
  }
  return m;
}

}  // namespace

absl::StatusOr<AnnDataset> GenerateSynthetic(const std::string& spec) {
  absl::StatusOr<SyntheticSpec> parsed = ParseSpec(spec);
  if (!parsed.ok()) return parsed.status();
  const SyntheticSpec& s = *parsed;
  Rng rng(s.seed);
  Clusters c;
  c.centres.rows = s.clusters;
  c.centres.cols = s.d;
  c.centres.data.resize(s.clusters * s.d);
  for (float& x : c.centres.data) x = rng.Normal();
  c.intrinsic = s.intrinsic;
  c.bases.resize(s.clusters * s.d * s.intrinsic);
  const float basis_scale = 1.0f / std::sqrt(float(s.d));
  for (float& x : c.bases) x = basis_scale * rng.Normal();

  AnnDataset ds;
  ds.name = absl::StrCat("synthetic-n", s.n, "-d", s.d, "-c", s.clusters, "-i", s.intrinsic, "-s",
                         s.seed);
  Rng train_rng(rng.Next());
  Rng test_rng(rng.Next());
  ds.train = Sample(c, s.n, train_rng);
  ds.test = Sample(c, s.q, test_rng);
  ds.distance = s.distance;
  return ds;
}

}  // namespace shoal::storage
