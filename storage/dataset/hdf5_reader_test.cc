// ann-benchmarks HDF5 files written with the HDF5 C API, read back through shoal::LoadDataset.
#include <hdf5.h>

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/dataset.h"
#include "storage/dataset/test_files.h"

namespace shoal {
namespace {

using ::shoal::storage::testing::MakeTempDir;
using ::shoal::storage::testing::Pattern;
using ::shoal::storage::testing::WriteFile;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

void WriteDataset(hid_t file, const char* name, hid_t type, hsize_t rows, hsize_t cols,
                  const void* data) {
  hsize_t dims[2] = {rows, cols};
  hid_t space = H5Screate_simple(2, dims, nullptr);
  hid_t dataset = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(dataset, 0);
  ASSERT_GE(H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), 0);
  H5Dclose(dataset);
  H5Sclose(space);
}

// Writes the string attribute `distance` as h5py does (variable length) or fixed length.
void WriteDistance(hid_t file, const char* value, bool variable) {
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, variable ? H5T_VARIABLE : strlen(value));
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate2(file, "distance", type, space, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(attr, 0);
  if (variable) {
    ASSERT_GE(H5Awrite(attr, type, &value), 0);
  } else {
    ASSERT_GE(H5Awrite(attr, type, value), 0);
  }
  H5Aclose(attr);
  H5Sclose(space);
  H5Tclose(type);
}

struct Contents {
  std::vector<float> train = Pattern<float>(20, 6);
  std::vector<float> test = Pattern<float>(3, 6);
  std::vector<int32_t> neighbors = Pattern<int32_t>(3, 4);
  std::vector<float> distances = Pattern<float>(3, 4);
};

std::string WriteAnnFile(const std::string& path, const Contents& c, const char* distance,
                         bool variable, bool with_neighbors = true) {
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  EXPECT_GE(file, 0);
  WriteDistance(file, distance, variable);
  WriteDataset(file, "train", H5T_NATIVE_FLOAT, 20, 6, c.train.data());
  WriteDataset(file, "test", H5T_NATIVE_FLOAT, 3, 6, c.test.data());
  if (with_neighbors) {
    WriteDataset(file, "neighbors", H5T_NATIVE_INT32, 3, 4, c.neighbors.data());
    WriteDataset(file, "distances", H5T_NATIVE_FLOAT, 3, 4, c.distances.data());
  }
  H5Fclose(file);
  return path;
}

TEST(Hdf5ReaderTest, ReadsAnnBenchmarksLayoutExactly) {
  const std::string dir = MakeTempDir();
  Contents c;
  for (bool variable : {true, false}) {
    const std::string path = WriteAnnFile(dir + "/a.hdf5", c, "angular", variable);
    absl::StatusOr<AnnDataset> ds = LoadDataset(path);
    ASSERT_TRUE(ds.ok()) << ds.status();
    EXPECT_EQ(ds->distance, "angular");
    EXPECT_EQ(ds->train.rows, 20u);
    EXPECT_EQ(ds->train.cols, 6u);
    EXPECT_THAT(ds->train.data, ElementsAreArray(c.train));
    EXPECT_THAT(ds->test.data, ElementsAreArray(c.test));
    EXPECT_EQ(ds->neighbors.rows, 3u);
    EXPECT_EQ(ds->neighbors.cols, 4u);
    EXPECT_THAT(ds->neighbors.data, ElementsAreArray(c.neighbors));
    EXPECT_THAT(ds->distances.data, ElementsAreArray(c.distances));
  }
}

TEST(Hdf5ReaderTest, NeighborsAreOptional) {
  const std::string dir = MakeTempDir();
  const std::string path = WriteAnnFile(dir + "/b.h5", Contents(), "euclidean", true, false);
  absl::StatusOr<AnnDataset> ds = ReadAnnBenchmarksHdf5(path);
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->neighbors.rows, 0u);
  EXPECT_EQ(ds->distance, "euclidean");
}

TEST(Hdf5ReaderTest, MissingNotHdf5AndTruncatedFilesAreErrors) {
  const std::string dir = MakeTempDir();
  EXPECT_TRUE(absl::IsNotFound(ReadAnnBenchmarksHdf5(dir + "/none.hdf5").status()));
  WriteFile(dir + "/text.hdf5", "this is not hdf5");
  absl::StatusOr<AnnDataset> text = ReadAnnBenchmarksHdf5(dir + "/text.hdf5");
  EXPECT_TRUE(absl::IsInvalidArgument(text.status())) << text.status();
  EXPECT_THAT(text.status().message(), HasSubstr("text.hdf5"));

  const std::string path = WriteAnnFile(dir + "/c.hdf5", Contents(), "euclidean", true);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (size_t keep : {bytes.size() - 100, bytes.size() / 2, size_t{600}}) {
    WriteFile(dir + "/cut.hdf5", bytes.substr(0, keep));
    absl::StatusOr<AnnDataset> cut = ReadAnnBenchmarksHdf5(dir + "/cut.hdf5");
    EXPECT_FALSE(cut.ok()) << "kept " << keep << " of " << bytes.size();
    EXPECT_THAT(cut.status().message(), HasSubstr("cut.hdf5"));
    EXPECT_THAT(cut.status().message(), HasSubstr("offset")) << cut.status();
  }
}

}  // namespace
}  // namespace shoal
