// Round trips and corruption handling of the .npy and idx (MNIST) readers.
#include <limits>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/dataset.h"
#include "storage/dataset/test_files.h"

namespace shoal {
namespace {

using ::shoal::storage::testing::Append;
using ::shoal::storage::testing::AppendBigEndian32;
using ::shoal::storage::testing::MakeTempDir;
using ::shoal::storage::testing::Npy;
using ::shoal::storage::testing::NpyHeader;
using ::shoal::storage::testing::Pattern;
using ::shoal::storage::testing::WriteFile;
using ::shoal::storage::testing::WriteGzip;
using ::testing::AllOf;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

using NpyIdxTest = ::shoal::storage::testing::TempFileTest;

TEST_F(NpyIdxTest, ReadsEveryNpyVersionAndDtype) {
  auto f4 = Pattern<float>(4, 3);
  auto f8 = Pattern<double>(2, 5);
  auto u1 = Pattern<uint8_t>(3, 2);
  auto i4 = Pattern<int32_t>(5, 1);
  auto i8 = Pattern<int64_t>(2, 2);
  absl::StatusOr<Matrix> m = ReadVectors(Write("f4.npy", Npy(1, "<f4", f4, 4, 3)));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->rows, 4u);
  EXPECT_EQ(m->cols, 3u);
  EXPECT_THAT(m->data, ElementsAreArray(f4));
  m = ReadVectors(Write("f8.npy", Npy(2, "<f8", f8, 2, 5)));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(m->data, ElementsAreArray(std::vector<float>(f8.begin(), f8.end())));
  m = ReadVectors(Write("u1.npy", Npy(3, "|u1", u1, 3, 2)));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(m->data, ElementsAreArray(std::vector<float>(u1.begin(), u1.end())));
  absl::StatusOr<IntMatrix> im = ReadIntVectors(Write("i4.npy", Npy(1, "<i4", i4, 5, 1)));
  ASSERT_TRUE(im.ok()) << im.status();
  EXPECT_THAT(im->data, ElementsAreArray(i4));
  im = ReadIntVectors(Write("i8.npy", Npy(1, "<i8", i8, 2, 2)));
  ASSERT_TRUE(im.ok()) << im.status();
  EXPECT_THAT(im->data, ElementsAreArray(std::vector<int32_t>(i8.begin(), i8.end())));
}

TEST_F(NpyIdxTest, OneDimensionalNpyIsAColumn) {
  std::string bytes = NpyHeader(1, "<i4", "(3,)");
  for (int32_t v : {7, 8, 9}) Append<int32_t>(&bytes, v);
  absl::StatusOr<IntMatrix> m = ReadIntVectors(Write("labels.npy", bytes));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->rows, 3u);
  EXPECT_EQ(m->cols, 1u);
  EXPECT_THAT(m->data, ElementsAreArray({7, 8, 9}));
}

TEST_F(NpyIdxTest, NpyRejectsFortranOrderBigEndianAndBadMagic) {
  std::string fortran = NpyHeader(1, "<f4", "(1, 1)", /*fortran=*/true) + std::string(4, '\0');
  absl::StatusOr<Matrix> m = ReadVectors(Write("fortran.npy", fortran));
  EXPECT_TRUE(absl::IsInvalidArgument(m.status())) << m.status();
  EXPECT_THAT(m.status().message(),
              AllOf(HasSubstr("fortran.npy"), HasSubstr("fortran_order"), HasSubstr("offset 10")));
  std::string big = NpyHeader(1, ">f4", "(1, 1)") + std::string(4, '\0');
  m = ReadVectors(Write("big.npy", big));
  EXPECT_TRUE(absl::IsInvalidArgument(m.status())) << m.status();
  m = ReadVectors(Write("magic.npy", "NOTNUMPYATALL"));
  EXPECT_TRUE(absl::IsInvalidArgument(m.status())) << m.status();
  EXPECT_THAT(m.status().message(), HasSubstr("magic at offset 0"));
}

TEST_F(NpyIdxTest, TruncatedNpyIsDataLoss) {
  std::string bytes = Npy(1, "<f4", Pattern<float>(10, 10), 10, 10);
  bytes.resize(bytes.size() - 7);
  absl::StatusOr<Matrix> m = ReadVectors(Write("short.npy", bytes));
  EXPECT_TRUE(absl::IsDataLoss(m.status())) << m.status();
  const size_t data_offset = NpyHeader(1, "<f4", "(10, 10)").size();
  EXPECT_THAT(m.status().message(),
              AllOf(HasSubstr("short.npy"), HasSubstr(absl::StrCat("offset ", data_offset))));
  std::string header_only = NpyHeader(1, "<f4", "(2, 2)").substr(0, 30);
  m = ReadVectors(Write("header.npy", header_only));
  EXPECT_TRUE(absl::IsDataLoss(m.status())) << m.status();
  EXPECT_THAT(m.status().message(), HasSubstr("truncated .npy header at offset 10"));
}

TEST_F(NpyIdxTest, NpyInt64OutsideInt32IsAnError) {
  std::vector<int64_t> values = {1, int64_t{1} << 40};
  absl::StatusOr<IntMatrix> m = ReadIntVectors(Write("wide.npy", Npy(1, "<i8", values, 2, 1)));
  EXPECT_TRUE(absl::IsInvalidArgument(m.status())) << m.status();
  const size_t row1 = NpyHeader(1, "<i8", "(2, 1)").size() + 8;
  EXPECT_THAT(m.status().message(), HasSubstr(absl::StrCat("row 1 at offset ", row1)));
}

std::string Idx3(uint32_t magic, uint32_t n, uint32_t rows, uint32_t cols,
                 const std::vector<uint8_t>& pixels) {
  std::string out;
  AppendBigEndian32(&out, magic);
  AppendBigEndian32(&out, n);
  AppendBigEndian32(&out, rows);
  AppendBigEndian32(&out, cols);
  out.append(pixels.begin(), pixels.end());
  return out;
}

TEST_F(NpyIdxTest, ReadsIdxImagesRawAndGzipped) {
  auto pixels = Pattern<uint8_t>(6, 12);  // 6 images of 3 x 4
  const std::string bytes = Idx3(0x803, 6, 3, 4, pixels);
  std::vector<float> expected(pixels.begin(), pixels.end());
  absl::StatusOr<Matrix> raw = ReadVectors(Write("img-idx3-ubyte", bytes));
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_EQ(raw->rows, 6u);
  EXPECT_EQ(raw->cols, 12u);
  EXPECT_THAT(raw->data, ElementsAreArray(expected));
  const std::string gz = dir_ + "/img-idx3-ubyte.gz";
  WriteGzip(gz, bytes);
  absl::StatusOr<Matrix> m = ReadVectors(gz);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(m->data, ElementsAreArray(expected));
  // Random access into the gzip stream, forwards then backwards.
  absl::StatusOr<std::unique_ptr<VectorReader>> reader = VectorReader::Open(gz);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<float> out(2 * 12);
  ASSERT_TRUE((*reader)->ReadRows(4, 2, absl::MakeSpan(out)).ok());
  EXPECT_THAT(out, ElementsAreArray(expected.begin() + 48, expected.end()));
  ASSERT_TRUE((*reader)->ReadRows(1, 2, absl::MakeSpan(out)).ok());
  EXPECT_THAT(out, ElementsAreArray(expected.begin() + 12, expected.begin() + 36));
}

TEST_F(NpyIdxTest, IdxWrongMagicIsAnError) {
  absl::StatusOr<Matrix> m = ReadVectors(Write("bad-idx3-ubyte", Idx3(0x0d03, 1, 1, 1, {0})));
  EXPECT_TRUE(absl::IsInvalidArgument(m.status())) << m.status();
  EXPECT_THAT(m.status().message(),
              AllOf(HasSubstr("bad-idx3-ubyte"), HasSubstr("magic 0x00000d03 at offset 0")));
}

TEST_F(NpyIdxTest, TruncatedGzipIdxIsDataLossWithOffset) {
  const std::string gz = dir_ + "/short-idx3-ubyte.gz";
  WriteGzip(gz, Idx3(0x803, 10, 2, 2, Pattern<uint8_t>(7, 4)));  // header says 10 images, 7 there
  absl::StatusOr<Matrix> m = ReadVectors(gz);
  EXPECT_TRUE(absl::IsDataLoss(m.status())) << m.status();
  EXPECT_THAT(m.status().message(),
              AllOf(HasSubstr(gz), HasSubstr("truncated row 7 at offset 44: need 4 bytes, 0")));
}

TEST_F(NpyIdxTest, AbsurdGzipIdxHeaderIsRejectedBeforeAllocating) {
  const std::string gz = dir_ + "/huge-idx3-ubyte.gz";
  WriteGzip(gz, Idx3(0x803, 0xfffffff0u, 28, 28, {1, 2, 3}));
  absl::StatusOr<Matrix> m = ReadVectors(gz);
  EXPECT_TRUE(absl::IsInvalidArgument(m.status())) << m.status();
  EXPECT_THAT(m.status().message(), AllOf(HasSubstr(gz), HasSubstr("offset 16")));
}

TEST_F(NpyIdxTest, CorruptGzipStreamIsDataLoss) {
  const std::string gz = dir_ + "/corrupt-idx3-ubyte.gz";
  WriteGzip(gz, Idx3(0x803, 100, 10, 10, Pattern<uint8_t>(100, 100)));
  std::string bytes;
  {
    std::ifstream in(gz, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (size_t i = bytes.size() / 2; i < bytes.size() / 2 + 16; ++i) bytes[i] ^= 0x5a;
  WriteFile(gz, bytes);
  absl::StatusOr<Matrix> m = ReadVectors(gz);
  EXPECT_TRUE(absl::IsDataLoss(m.status())) << m.status();
  EXPECT_THAT(m.status().message(), AllOf(HasSubstr(gz), HasSubstr("offset")));
}

}  // namespace
}  // namespace shoal
