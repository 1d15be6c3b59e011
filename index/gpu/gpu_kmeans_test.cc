// The plain API of gpu_kmeans.h: argument checks (with or without a device) and Unavailable
// without one. The kernels' results are checked against the float64 reference in
// index/kmeans_gpu_test.cc. ctest label `gpu`.
#include "index/gpu/gpu_kmeans.h"

#include <iostream>
#include <vector>

#include "gtest/gtest.h"

namespace shoal::index::gpu {
namespace {

TEST(GpuKmeansTest, DescribesTheDevice) {
  std::cout << "device: " << GpuDescription() << "\n";
  EXPECT_FALSE(GpuDescription().empty());
}

TEST(GpuKmeansTest, RejectsBadArgumentsWithOrWithoutDevice) {
  const float x[64] = {};
  uint32_t label[2] = {};
  auto code = [](const absl::Status& s) { return s.code(); };
  constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(code(GpuAssignTopM(x, 1, x, 0, 4, 1, nullptr, label, nullptr)), kInvalid);
  EXPECT_EQ(code(GpuAssignTopM(x, 1, x, 1, 0, 1, nullptr, label, nullptr)), kInvalid);
  EXPECT_EQ(code(GpuAssignTopM(x, 1, x, 1, 4, 1, nullptr, nullptr, nullptr)), kInvalid);
  EXPECT_EQ(code(GpuAssignTopM(x, 1, x, 2, 4, 3, nullptr, label, nullptr)), kInvalid);  // m > k
  EXPECT_EQ(code(GpuAssignTopM(x, 1, x, 40, 1, kGpuMaxTopM + 1, nullptr, label, nullptr)),
            kInvalid);
  GpuOptions four_streams;
  four_streams.streams = 4;
  EXPECT_EQ(code(GpuAssignTopM(x, 1, x, 1, 4, 1, nullptr, label, nullptr, four_streams)), kInvalid);
  std::vector<float> nan_centroid(8, 0.0f);
  nan_centroid[5] = 0.0f / 0.0f;
  const absl::Status s = GpuAssignTopM(x, 1, nan_centroid.data(), 2, 4, 1, nullptr, label, nullptr);
  EXPECT_EQ(code(s), kInvalid);
  EXPECT_NE(s.message().find("centroids[1]"), std::string::npos) << s;
  EXPECT_TRUE(GpuAssignTopM(nullptr, 0, x, 1, 4, 1, nullptr, nullptr, nullptr).ok());

  float centroids[8];
  EXPECT_EQ(code(GpuUpdateCentroids(x, 1, 4, label, 0, centroids, nullptr)), kInvalid);
  EXPECT_EQ(code(GpuUpdateCentroids(x, 1, 0, label, 1, centroids, nullptr)), kInvalid);
  EXPECT_EQ(code(GpuUpdateCentroids(x, 1, 4, nullptr, 1, centroids, nullptr)), kInvalid);
  EXPECT_TRUE(GpuUpdateCentroids(nullptr, 0, 4, nullptr, 2, centroids, nullptr).ok());
}

TEST(GpuKmeansTest, ReportsUnavailableWithoutDevice) {
  if (GpuAvailable()) GTEST_SKIP() << "a GPU is present: " << GpuDescription();
  const float x[4] = {};
  uint32_t label = 0;
  float centroid[4];
  EXPECT_EQ(GpuAssignTopM(x, 1, x, 1, 4, 1, nullptr, &label, nullptr).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(GpuUpdateCentroids(x, 1, 4, &label, 1, centroid, nullptr).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(GpuRetainPoints(x, 1, 4), nullptr);
}

}  // namespace
}  // namespace shoal::index::gpu
