#include "coordinator/checkpoint/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace tj {
namespace {

TEST(Crc32cTest, StandardCheckValue) {
  EXPECT_EQ(crc32c::Value("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c::ExtendPortable(0, "123456789", 9), 0xE3069283u);
}

// Test vectors from RFC 3720 (iSCSI), appendix B.4.
TEST(Crc32cTest, Rfc3720Vectors) {
  EXPECT_EQ(crc32c::Value(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c::Value(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending(32, '\0');
  std::string descending(32, '\0');
  for (int i = 0; i < 32; ++i) {
    ascending[i] = static_cast<char>(i);
    descending[i] = static_cast<char>(31 - i);
  }
  EXPECT_EQ(crc32c::Value(ascending), 0x46DD794Eu);
  EXPECT_EQ(crc32c::Value(descending), 0x113FDB5Cu);
  EXPECT_EQ(crc32c::Value(""), 0u);
}

TEST(Crc32cTest, HardwareAndTableAgreeOnEveryLengthAndAlignment) {
  if (!crc32c::HardwareAvailable()) GTEST_SKIP() << "no SSE4.2 on this CPU";
  std::mt19937 rng(7);
  std::string data(4096 + 16, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t offset = 0; offset < 16; ++offset) {
    for (size_t size = 0; size <= 300; ++size) {
      ASSERT_EQ(crc32c::ExtendHardware(0, data.data() + offset, size),
                crc32c::ExtendPortable(0, data.data() + offset, size))
          << "offset " << offset << " size " << size;
    }
  }
  EXPECT_EQ(crc32c::ExtendHardware(0x12345678, data.data(), data.size()),
            crc32c::ExtendPortable(0x12345678, data.data(), data.size()));
}

// Large inputs take the three-lane path (12 KiB and up): every length around its boundaries, at
// every alignment, and a large one, against the table.
TEST(Crc32cTest, HardwareAndTableAgreeOnLargeInputs) {
  if (!crc32c::HardwareAvailable()) GTEST_SKIP() << "no SSE4.2 on this CPU";
  std::mt19937 rng(11);
  std::string data((1 << 20) + 64, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t size : {size_t{12287}, size_t{12288}, size_t{12289}, size_t{12295},
                        size_t{24575}, size_t{24576}, size_t{24583}, size_t{40000}}) {
      ASSERT_EQ(crc32c::ExtendHardware(0x9e3779b9, data.data() + offset, size),
                crc32c::ExtendPortable(0x9e3779b9, data.data() + offset, size))
          << "offset " << offset << " size " << size;
    }
  }
  EXPECT_EQ(crc32c::ExtendHardware(0, data.data() + 3, 1 << 20),
            crc32c::ExtendPortable(0, data.data() + 3, 1 << 20));
}

TEST(Crc32cTest, ExtendEqualsOneShot) {
  const std::string text = "hello, parameter servers and workers";
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    const uint32_t head = crc32c::Value(text.data(), cut);
    EXPECT_EQ(crc32c::Extend(head, text.data() + cut, text.size() - cut), crc32c::Value(text));
  }
}

TEST(Crc32cTest, CombineEqualsTheCrcOfTheConcatenation) {
  std::mt19937 rng(11);
  std::string data(200000, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (const size_t cut :
       {size_t{0}, size_t{1}, size_t{7}, size_t{4096}, size_t{199999}, size_t{200000}}) {
    const std::string_view a(data.data(), cut);
    const std::string_view b(data.data() + cut, data.size() - cut);
    EXPECT_EQ(crc32c::Combine(crc32c::Value(a), crc32c::Value(b), b.size()), crc32c::Value(data))
        << "cut " << cut;
  }
}

TEST(Crc32cTest, MaskIsTensorFlowsAndUnmaskInvertsIt) {
  const uint32_t crc = crc32c::Value("foo");
  EXPECT_EQ(crc32c::Mask(crc), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
  EXPECT_NE(crc32c::Mask(crc), crc);
  EXPECT_NE(crc32c::Mask(crc32c::Mask(crc)), crc32c::Mask(crc));
  for (const uint32_t value : {0u, 1u, 0xffffffffu, 0xE3069283u, crc}) {
    EXPECT_EQ(crc32c::Unmask(crc32c::Mask(value)), value);
  }
}

}  // namespace
}  // namespace tj
