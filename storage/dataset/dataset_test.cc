// Round trips and corruption handling of the *vecs and big-ann *bin readers, streaming reads,
// synthetic datasets, and the real Fashion-MNIST files when installed.
#include "shoal/dataset.h"

#include <sys/stat.h>

#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/dataset/test_files.h"

namespace shoal {
namespace {

using ::shoal::storage::testing::Append;
using ::shoal::storage::testing::Bin;
using ::shoal::storage::testing::MakeTempDir;
using ::shoal::storage::testing::Pattern;
using ::shoal::storage::testing::Vecs;
using ::shoal::storage::testing::WriteFile;
using ::testing::AllOf;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

template <typename T>
std::vector<float> AsFloats(const std::vector<T>& v) {
  return std::vector<float>(v.begin(), v.end());
}

using DatasetTest = ::shoal::storage::testing::TempFileTest;

TEST_F(DatasetTest, ReadsFvecsBvecsIvecsExactly) {
  auto f = Pattern<float>(5, 3);
  auto b = Pattern<uint8_t>(4, 2);
  auto i = Pattern<int32_t>(3, 7);
  absl::StatusOr<Matrix> fm = ReadVectors(Write("a.fvecs", Vecs(f, 3)));
  ASSERT_TRUE(fm.ok()) << fm.status();
  EXPECT_EQ(fm->rows, 5u);
  EXPECT_EQ(fm->cols, 3u);
  EXPECT_THAT(fm->data, ElementsAreArray(f));
  absl::StatusOr<Matrix> bm = ReadVectors(Write("a.bvecs", Vecs(b, 2)));
  ASSERT_TRUE(bm.ok()) << bm.status();
  EXPECT_THAT(bm->data, ElementsAreArray(AsFloats(b)));
  absl::StatusOr<IntMatrix> im = ReadIntVectors(Write("a.ivecs", Vecs(i, 7)));
  ASSERT_TRUE(im.ok()) << im.status();
  EXPECT_EQ(im->rows, 3u);
  EXPECT_EQ(im->cols, 7u);
  EXPECT_THAT(im->data, ElementsAreArray(i));
}

TEST_F(DatasetTest, ReadsBigAnnBinExactly) {
  auto f = Pattern<float>(6, 4);
  auto b = Pattern<uint8_t>(2, 5);
  auto i = Pattern<int32_t>(3, 10);
  absl::StatusOr<Matrix> fm = ReadVectors(Write("a.fbin", Bin(f, 6, 4)));
  ASSERT_TRUE(fm.ok()) << fm.status();
  EXPECT_EQ(fm->rows, 6u);
  EXPECT_THAT(fm->data, ElementsAreArray(f));
  absl::StatusOr<Matrix> bm = ReadVectors(Write("a.u8bin", Bin(b, 2, 5)));
  ASSERT_TRUE(bm.ok()) << bm.status();
  EXPECT_THAT(bm->data, ElementsAreArray(AsFloats(b)));
  absl::StatusOr<IntMatrix> im = ReadIntVectors(Write("a.ibin", Bin(i, 3, 10)));
  ASSERT_TRUE(im.ok()) << im.status();
  EXPECT_THAT(im->data, ElementsAreArray(i));
}

TEST_F(DatasetTest, MaxRowsReadsAPrefix) {
  auto f = Pattern<float>(10, 3);
  absl::StatusOr<Matrix> m = ReadVectors(Write("a.fvecs", Vecs(f, 3)), 4);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->rows, 4u);
  EXPECT_THAT(m->data, ElementsAreArray(f.begin(), f.begin() + 12));
}

TEST_F(DatasetTest, EmptyFvecsIsAnEmptyMatrix) {
  absl::StatusOr<Matrix> m = ReadVectors(Write("empty.fvecs", ""));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->rows, 0u);
}

TEST_F(DatasetTest, StreamingReaderReadsAnyRowRange) {
  auto f = Pattern<float>(100, 8);
  for (const std::string& path : {Write("s.fvecs", Vecs(f, 8)), Write("s.fbin", Bin(f, 100, 8))}) {
    absl::StatusOr<std::unique_ptr<VectorReader>> reader = VectorReader::Open(path);
    ASSERT_TRUE(reader.ok()) << reader.status();
    EXPECT_EQ((*reader)->rows(), 100u);
    EXPECT_EQ((*reader)->cols(), 8u);
    EXPECT_FALSE((*reader)->is_integer());
    std::vector<float> out(7 * 8);
    ASSERT_TRUE((*reader)->ReadRows(90, 7, absl::MakeSpan(out)).ok());
    EXPECT_THAT(out, ElementsAreArray(f.begin() + 90 * 8, f.begin() + 97 * 8));
    ASSERT_TRUE((*reader)->ReadRows(3, 7, absl::MakeSpan(out)).ok());  // backwards
    EXPECT_THAT(out, ElementsAreArray(f.begin() + 3 * 8, f.begin() + 10 * 8));
    EXPECT_TRUE(absl::IsInvalidArgument((*reader)->ReadRows(95, 7, absl::MakeSpan(out))));
    std::vector<int32_t> ints(7 * 8);
    EXPECT_TRUE(absl::IsInvalidArgument((*reader)->ReadIntRows(0, 7, absl::MakeSpan(ints))));
  }
}

TEST_F(DatasetTest, MissingFileIsNotFound) {
  absl::StatusOr<Matrix> m = ReadVectors(dir_ + "/nope.fvecs");
  EXPECT_TRUE(absl::IsNotFound(m.status())) << m.status();
  EXPECT_THAT(m.status().message(), HasSubstr("nope.fvecs"));
}

TEST_F(DatasetTest, UnknownExtensionIsInvalidArgument) {
  absl::StatusOr<Matrix> m = ReadVectors(Write("a.txt", "hello"));
  EXPECT_TRUE(absl::IsInvalidArgument(m.status())) << m.status();
}

TEST_F(DatasetTest, TruncatedFvecsNamesFileRecordAndOffset) {
  std::string bytes = Vecs(Pattern<float>(18, 128), 128);  // 516 bytes a record
  bytes.resize(17 * 516 + 200);
  const std::string path = Write("t.fvecs", bytes);
  absl::StatusOr<Matrix> m = ReadVectors(path);
  EXPECT_TRUE(absl::IsDataLoss(m.status())) << m.status();
  EXPECT_THAT(m.status().message(),
              AllOf(HasSubstr(path), HasSubstr("truncated record 17 at offset 8772"),
                    HasSubstr("need 516 bytes, 200 left")));
}

TEST_F(DatasetTest, DimensionChangeBetweenRecordsIsAnError) {
  std::string bytes = Vecs(Pattern<float>(3, 4), 4) + Vecs(Pattern<float>(1, 5), 5);
  const std::string path = Write("d.fvecs", bytes);
  absl::StatusOr<Matrix> m = ReadVectors(path);
  EXPECT_TRUE(absl::IsInvalidArgument(m.status())) << m.status();
  EXPECT_THAT(m.status().message(),
              AllOf(HasSubstr(path), HasSubstr("record 3 at offset 60 has dimension 5")));
  // Same file size as whole records, so only the per-record check can catch it.
  std::string same_size = Vecs(Pattern<float>(4, 4), 4);
  same_size[2 * 20] = 9;
  absl::StatusOr<Matrix> m2 = ReadVectors(Write("d2.fvecs", same_size));
  EXPECT_TRUE(absl::IsInvalidArgument(m2.status())) << m2.status();
  EXPECT_THAT(m2.status().message(), HasSubstr("record 2 at offset 40 has dimension 9"));
}

TEST_F(DatasetTest, AbsurdVecsDimensionIsAnError) {
  std::string bytes;
  Append<int32_t>(&bytes, -5);
  Append<float>(&bytes, 1.0f);
  absl::StatusOr<Matrix> m = ReadVectors(Write("neg.fvecs", bytes));
  EXPECT_TRUE(absl::IsInvalidArgument(m.status())) << m.status();
  EXPECT_THAT(m.status().message(), HasSubstr("offset 0"));
}

TEST_F(DatasetTest, BinHeaderLargerThanFileIsAnError) {
  std::string huge = Bin(Pattern<float>(1, 4), 0xffffffffu, 0xffffffffu);
  absl::StatusOr<Matrix> m = ReadVectors(Write("huge.fbin", huge));
  EXPECT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), AllOf(HasSubstr("huge.fbin"), HasSubstr("offset 8")));
  std::string truncated = Bin(Pattern<float>(3, 4), 4, 4);
  absl::StatusOr<Matrix> t = ReadVectors(Write("short.fbin", truncated));
  EXPECT_TRUE(absl::IsDataLoss(t.status())) << t.status();
  EXPECT_THAT(t.status().message(), AllOf(HasSubstr("short.fbin"), HasSubstr("has 56 bytes")));
  absl::StatusOr<Matrix> h = ReadVectors(Write("header.fbin", "abc"));
  EXPECT_TRUE(absl::IsDataLoss(h.status())) << h.status();
  EXPECT_THAT(h.status().message(), HasSubstr("truncated header at offset 0: need 8 bytes, 3"));
}

TEST_F(DatasetTest, BinTrailingBytesAreAnError) {
  std::string bytes = Bin(Pattern<float>(2, 4), 2, 4) + "xyz";
  absl::StatusOr<Matrix> m = ReadVectors(Write("trail.fbin", bytes));
  EXPECT_TRUE(absl::IsInvalidArgument(m.status())) << m.status();
  EXPECT_THAT(m.status().message(), HasSubstr("3 trailing bytes at offset 40"));
}

TEST_F(DatasetTest, FloatFileAsIntegersIsInvalidArgument) {
  absl::StatusOr<IntMatrix> m = ReadIntVectors(Write("f.fvecs", Vecs(Pattern<float>(2, 2), 2)));
  EXPECT_TRUE(absl::IsInvalidArgument(m.status())) << m.status();
}

// Every prefix and many single-byte corruptions of a file of each format give a result or an
// error, never a crash or a runaway allocation (run under ASan to see the difference).
TEST_F(DatasetTest, TruncationsAndBitFlipsNeverCrash) {
  std::string npy = storage::testing::Npy(2, "<f4", Pattern<float>(3, 4), 3, 4);
  std::string idx;
  storage::testing::AppendBigEndian32(&idx, 0x803);
  for (uint32_t d : {3u, 2u, 2u}) storage::testing::AppendBigEndian32(&idx, d);
  idx += std::string(12, '\7');
  const std::vector<std::pair<std::string, std::string>> files = {
      {"x.fvecs", Vecs(Pattern<float>(3, 4), 4)},
      {"x.bvecs", Vecs(Pattern<uint8_t>(3, 4), 4)},
      {"x.u8bin", Bin(Pattern<uint8_t>(3, 4), 3, 4)},
      {"x.npy", npy},
      {"x-idx3-ubyte", idx}};
  uint32_t seed = 12345;
  std::printf("bit-flip seed %u\n", seed);
  for (const auto& [name, bytes] : files) {
    for (size_t keep = 0; keep < bytes.size(); ++keep) {
      absl::StatusOr<Matrix> m = ReadVectors(Write(name, bytes.substr(0, keep)));
      if (m.ok()) {
        EXPECT_LE(m->data.size(), keep) << name << " kept " << keep;
      }
    }
    for (int trial = 0; trial < 200; ++trial) {
      std::string corrupt = bytes;
      seed = seed * 1103515245u + 12345u;
      corrupt[(seed >> 8) % corrupt.size()] ^= static_cast<char>(1 + (seed >> 20) % 255);
      absl::StatusOr<Matrix> m = ReadVectors(Write(name, corrupt));
      if (m.ok()) {
        EXPECT_LE(m->data.size(), corrupt.size()) << name;
      }
    }
  }
}

TEST(SyntheticTest, SameSpecGivesSameDataAndSeedChangesIt) {
  absl::StatusOr<AnnDataset> a = LoadDataset("synthetic:n=500,d=16,q=20,clusters=5,seed=7");
  absl::StatusOr<AnnDataset> b = LoadDataset("synthetic:n=500,d=16,q=20,clusters=5,seed=7");
  absl::StatusOr<AnnDataset> c = LoadDataset("synthetic:n=500,d=16,q=20,clusters=5,seed=8");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << a.status();
  EXPECT_EQ(a->train.rows, 500u);
  EXPECT_EQ(a->train.cols, 16u);
  EXPECT_EQ(a->test.rows, 20u);
  EXPECT_EQ(a->distance, "euclidean");
  EXPECT_EQ(a->train.data, b->train.data);
  EXPECT_EQ(a->test.data, b->test.data);
  EXPECT_NE(a->train.data, c->train.data);
  absl::StatusOr<AnnDataset> angular = LoadDataset("synthetic:n=10,d=4,distance=angular");
  ASSERT_TRUE(angular.ok()) << angular.status();
  EXPECT_EQ(angular->distance, "angular");
}

TEST(SyntheticTest, ClustersSpreadAlongTheirIntrinsicSubspace) {
  // One cluster spread along one direction: residuals from the mean are nearly (anti)parallel.
  absl::StatusOr<AnnDataset> line = LoadDataset("synthetic:n=200,d=8,clusters=1,intrinsic=1");
  absl::StatusOr<AnnDataset> full = LoadDataset("synthetic:n=200,d=8,clusters=1,intrinsic=0");
  ASSERT_TRUE(line.ok() && full.ok()) << line.status();
  auto mean_abs_cos = [](const Matrix& m) {
    std::vector<double> mean(m.cols);
    for (size_t i = 0; i < m.rows; ++i)
      for (size_t j = 0; j < m.cols; ++j) mean[j] += m.Row(i)[j] / double(m.rows);
    double sum = 0;
    for (size_t i = 1; i < m.rows; ++i) {
      double dot = 0, na = 0, nb = 0;
      for (size_t j = 0; j < m.cols; ++j) {
        const double a = m.Row(0)[j] - mean[j], b = m.Row(i)[j] - mean[j];
        dot += a * b;
        na += a * a;
        nb += b * b;
      }
      sum += std::abs(dot) / std::sqrt(na * nb);
    }
    return sum / double(m.rows - 1);
  };
  EXPECT_GT(mean_abs_cos(line->train), 0.9);
  EXPECT_LT(mean_abs_cos(full->train), 0.6);
  EXPECT_NE(line->name, full->name);
}

TEST(SyntheticTest, BadSpecIsInvalidArgument) {
  EXPECT_TRUE(absl::IsInvalidArgument(LoadDataset("synthetic:n=0").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(LoadDataset("synthetic:x=3").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(LoadDataset("synthetic:d=abc").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(LoadDataset("no-such-dataset").status()));
}

TEST(FashionMnistTest, ReadsDebianPackageFiles) {
  struct stat st;
  if (stat("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", &st) != 0) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  absl::StatusOr<AnnDataset> ds = LoadDataset("fashion-mnist");
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->train.rows, 60000u);
  EXPECT_EQ(ds->train.cols, 784u);
  EXPECT_EQ(ds->test.rows, 10000u);
  EXPECT_EQ(ds->test.cols, 784u);
  EXPECT_EQ(ds->distance, "euclidean");
  float lo = 255, hi = 0;
  for (float v : ds->train.data) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    ASSERT_EQ(v, static_cast<float>(static_cast<int>(v)));
  }
  EXPECT_EQ(lo, 0.0f);
  EXPECT_EQ(hi, 255.0f);
  absl::StatusOr<IntMatrix> labels =
      ReadIntVectors("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz");
  ASSERT_TRUE(labels.ok()) << labels.status();
  EXPECT_EQ(labels->rows, 10000u);
  EXPECT_EQ(labels->cols, 1u);
  for (int32_t label : labels->data) ASSERT_TRUE(label >= 0 && label <= 9) << label;
}

}  // namespace
}  // namespace shoal
