// Seeded synthetic datasets: a clustered Gaussian mixture, bit-identical for identical specs
// (own RNG and Box-Muller, nothing implementation-defined). Internal to storage/dataset;
// reached through shoal::LoadDataset("synthetic:...").
#ifndef SHOAL_STORAGE_DATASET_SYNTHETIC_H_
#define SHOAL_STORAGE_DATASET_SYNTHETIC_H_

#include <string>

#include "absl/status/statusor.h"
#include "shoal/dataset.h"

namespace shoal::storage {

// spec = "synthetic[:n=N,d=D,q=Q,clusters=C,seed=S,distance=M]" (defaults 100000, 128, 1000,
// 100, 1, euclidean; M = euclidean|angular only labels the dataset's metric).
// Cluster centres ~ N(0, 1)^d; each point = a uniformly chosen centre + N(0, 0.3^2)^d; the q
// queries are drawn the same way from an independent stream. InvalidArgument for a bad spec.
absl::StatusOr<AnnDataset> GenerateSynthetic(const std::string& spec);

}  // namespace shoal::storage

#endif  // SHOAL_STORAGE_DATASET_SYNTHETIC_H_
