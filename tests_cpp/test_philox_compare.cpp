// nvfuse_philox::unit_below and its siblings compare a random word's unit
// float with a bound without converting it (the dropout kernels' keep
// mask). They must agree with the float compares they replace for every
// word: checked here on the host (the same code runs in the kernels) at the
// words next to each bound's threshold and at the extremes.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "codegen/philox.cuh"

namespace {

using nvfuse_philox::unit_float;

std::vector<unsigned int> words_near(float p) {
  std::vector<unsigned int> words = {0u, 1u, 0xFFu, 0x100u, 0xFFFFFFFFu, 0xFFFFFF00u};
  if (std::isfinite(p) && p > 0.0f && p < 1.0f) {
    const double scaled = static_cast<double>(p) * 16777216.0;
    for (double m :
        {std::floor(scaled) - 1, std::floor(scaled), std::ceil(scaled), std::ceil(scaled) + 1}) {
      if (m < 0 || m >= 16777216.0) {
        continue;
      }
      const unsigned int base = static_cast<unsigned int>(m) << 8;
      for (unsigned int low : {0u, 1u, 0x80u, 0xFFu}) {
        words.push_back(base | low);
      }
    }
  }
  return words;
}

TEST(PhiloxCompare, WordComparesAgreeWithFloatComparesAtEveryThreshold) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> bounds = {0.0f, -0.0f, -1.0f, -inf, 1e-30f, 5.9604645e-08f, 0.1f, 0.5f,
      0.9f, 0.9f + 1e-7f, 1.0f - 5.9604645e-08f, 1.0f, 1.5f, inf, nan, 0.3333333f, 0.75f};
  for (float p : bounds) {
    for (unsigned int w : words_near(p)) {
      const float u = unit_float(w);
      EXPECT_EQ(nvfuse_philox::unit_below(w, p), u < p) << "word " << w << " p " << p;
      EXPECT_EQ(nvfuse_philox::unit_at_most(w, p), u <= p) << "word " << w << " p " << p;
      EXPECT_EQ(nvfuse_philox::unit_above(w, p), u > p) << "word " << w << " p " << p;
      EXPECT_EQ(nvfuse_philox::unit_at_least(w, p), u >= p) << "word " << w << " p " << p;
    }
  }
}

TEST(PhiloxCompare, UnitWordsAreTheWordsOfTheUnitFloats) {
  unsigned int words[8];
  float floats[8];
  for (unsigned long long first : {0ull, 4ull, 5ull}) {
    nvfuse_philox::unit_words<8>(7, 3, first, 1, words);
    nvfuse_philox::unit_floats<8>(7, 3, first, 1, floats);
    for (int l = 0; l < 8; ++l) {
      EXPECT_EQ(unit_float(words[l]), floats[l]);
      EXPECT_EQ(floats[l], nvfuse_philox::uniform_float(7, 3, first + l));
    }
  }
}

// Random123's known-answer vectors for Philox4x32-10 (kat_vectors): nvfuse's
// rounds are the published generator's.
TEST(PhiloxCompare, PhiloxGivesRandom123sKnownAnswers) {
  struct Case {
    unsigned int counter[4];
    unsigned int key[2];
    unsigned int expected[4];
  };
  const Case cases[] = {
      {{0u, 0u, 0u, 0u}, {0u, 0u}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu},
          {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u},
          {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (const Case& c : cases) {
    const nvfuse_philox::Words w = nvfuse_philox::philox(
        c.counter[0], c.counter[1], c.counter[2], c.counter[3], c.key[0], c.key[1]);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(w.w[i], c.expected[i]) << "word " << i << " of counter " << c.counter[0];
    }
  }
}

}  // namespace
