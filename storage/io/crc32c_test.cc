#include "storage/io/crc32c.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace shoal::storage {
namespace {

TEST(Crc32cTest, KnownVectors) {
  const char* digits = "123456789";
  EXPECT_EQ(Crc32c(digits, 9), 0xE3069283u);
  EXPECT_EQ(Crc32cSoftware(digits, 9), 0xE3069283u);
  EXPECT_EQ(Crc32c("", 0), 0u);
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xff);
  EXPECT_EQ(Crc32c(zeros.data(), 32), 0x8A9136AAu);  // RFC 3720 B.4 test vectors.
  EXPECT_EQ(Crc32c(ones.data(), 32), 0x62A8AB43u);
  std::vector<uint8_t> inc(32);
  for (int i = 0; i < 32; ++i) inc[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(Crc32c(inc.data(), 32), 0x46DD794Eu);
}

TEST(Crc32cTest, HardwareMatchesTableAtEveryLengthAndAlignment) {
  if (!Crc32cHasHardware()) GTEST_SKIP() << "no SSE4.2";
  std::mt19937 rng(7);
  std::vector<uint8_t> buf(5000);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t start = 0; start < 9; ++start) {
    for (size_t n : {0u, 1u, 7u, 8u, 9u, 63u, 100u, 4092u, 4991u - 9u}) {
      ASSERT_EQ(Crc32cHardware(buf.data() + start, n, 0x1234u),
                Crc32cSoftware(buf.data() + start, n, 0x1234u))
          << start << " " << n;
    }
  }
}

TEST(Crc32cTest, ExtendsAcrossPieces) {
  std::string s = "The quick brown fox jumps over the lazy dog";
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    EXPECT_EQ(Crc32c(s.data() + cut, s.size() - cut, Crc32c(s.data(), cut)),
              Crc32c(s.data(), s.size()));
  }
}

}  // namespace
}  // namespace shoal::storage
