// Seeded synthetic sets shaped like real embeddings (text / image model outputs), for the
// `shoal_bench ann --suite` datasets. Internal to storage/dataset; reached through
// shoal::LoadDataset("embedding:...").
//
// Unlike "synthetic:" (equal-sized isotropic-centre clusters of one intrinsic dimension), these
// have the traits that make real sets hard for partition and graph indexes alike:
//   - topics and sub-topics: 2-level clusters (sub-cluster centres around topic centres);
//   - power-law cluster sizes (Zipf, exponent `zipf`, default 1): a few huge, many tiny;
//   - anisotropy: a decaying per-dimension spectrum (scale ~ (j+1)^-0.5) and, for angular
//     sets, a shared mean direction (real embeddings all lean one way: positive cosines);
//   - varied local intrinsic dimension: each cluster spreads along its own subspace of
//     log-uniform dimension in [4, 64] with decaying axis scales, plus isotropic noise, and its
//     spread is scaled log-normally (dense and loose clusters side by side).
// Queries come from the same mixture through an independent stream. Bit-identical for
// identical specs on every machine (own RNG).
#ifndef SHOAL_STORAGE_DATASET_EMBEDDING_SYNTHETIC_H_
#define SHOAL_STORAGE_DATASET_EMBEDDING_SYNTHETIC_H_

#include <string>

#include "absl/status/statusor.h"
#include "shoal/dataset.h"

namespace shoal::storage {

// spec = "embedding[:n=N,d=D,q=Q,seed=S,zipf=Z,spread=P,noise=E,distance=angular|euclidean]"
// (defaults 100000, 128, 1000, 1, 1.0, 1.5, 1.0 angular / 0.5 euclidean, angular).
// InvalidArgument for a bad spec (naming the item).
absl::StatusOr<AnnDataset> GenerateEmbeddingLike(const std::string& spec);

}  // namespace shoal::storage

#endif  // SHOAL_STORAGE_DATASET_EMBEDDING_SYNTHETIC_H_
