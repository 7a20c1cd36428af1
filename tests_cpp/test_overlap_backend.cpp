// The overlap backend's choice between the c10d loop and the copy-engine
// loop for one call (multidevice/overlap_backend.h).
#include <gtest/gtest.h>

#include "ir/errors.h"
#include "multidevice/overlap_backend.h"

namespace nvfuse {
namespace {

OverlapCall gpu_call(bool reduce_scatter, int64_t rows_per_device) {
  OverlapCall call;
  call.has_copy_engine_loop = true;
  call.cuda = true;
  call.team_size = 4;
  call.reduce_scatter = reduce_scatter;
  call.rows_per_device = rows_per_device;
  return call;
}

// The peer question asked as a collective: counts how often it was asked.
struct Peers {
  bool reachable = true;
  int asked = 0;
  std::function<bool()> question() {
    return [this] {
      ++asked;
      return reachable;
    };
  }
};

TEST(OverlapBackendChoice, AutoTakesTheCopyEngineWhereItPaysOff) {
  Peers peers;
  EXPECT_TRUE(use_copy_engine(OverlapBackend::kAuto, gpu_call(false, 1024), peers.question()));
  EXPECT_TRUE(use_copy_engine(OverlapBackend::kAuto, gpu_call(true, 2048), peers.question()));
  EXPECT_EQ(peers.asked, 2);
}

TEST(OverlapBackendChoice, AutoKeepsNcclForThinGemmsWithoutAsking) {
  Peers peers;
  EXPECT_FALSE(use_copy_engine(OverlapBackend::kAuto, gpu_call(false, 512), peers.question()));
  EXPECT_FALSE(use_copy_engine(OverlapBackend::kAuto, gpu_call(true, 1024), peers.question()));
  EXPECT_EQ(peers.asked, 0);
}

TEST(OverlapBackendChoice, AutoKeepsNcclWithoutPeerAccess) {
  Peers peers;
  peers.reachable = false;
  EXPECT_FALSE(use_copy_engine(OverlapBackend::kAuto, gpu_call(false, 8192), peers.question()));
  EXPECT_EQ(peers.asked, 1);
}

TEST(OverlapBackendChoice, ExplicitSettingsDecideAlone) {
  Peers peers;
  peers.reachable = false;
  EXPECT_TRUE(
      use_copy_engine(OverlapBackend::kSymmetricMemory, gpu_call(true, 16), peers.question()));
  EXPECT_FALSE(use_copy_engine(OverlapBackend::kNccl, gpu_call(false, 8192), peers.question()));
  EXPECT_EQ(peers.asked, 0);
}

TEST(OverlapBackendChoice, CpuTensorsTeamsOfOneAndMissingLoopsTakeC10d) {
  Peers peers;
  for (OverlapBackend backend : {OverlapBackend::kAuto, OverlapBackend::kSymmetricMemory}) {
    OverlapCall cpu = gpu_call(false, 8192);
    cpu.cuda = false;
    OverlapCall alone = gpu_call(false, 8192);
    alone.team_size = 1;
    OverlapCall no_loop = gpu_call(false, 8192);
    no_loop.has_copy_engine_loop = false;
    EXPECT_FALSE(use_copy_engine(backend, cpu, peers.question()));
    EXPECT_FALSE(use_copy_engine(backend, alone, peers.question()));
    EXPECT_FALSE(use_copy_engine(backend, no_loop, peers.question()));
  }
  EXPECT_EQ(peers.asked, 0);
}

TEST(OverlapBackendChoice, NamesRoundTripAndUnknownNamesAreDefinitionErrors) {
  for (OverlapBackend backend :
      {OverlapBackend::kAuto, OverlapBackend::kNccl, OverlapBackend::kSymmetricMemory}) {
    EXPECT_EQ(overlap_backend_named(overlap_backend_name(backend), "test"), backend);
  }
  try {
    overlap_backend_named("gloo", "set_overlap_backend");
    FAIL() << "no error for an unknown backend";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kDefinition);
    EXPECT_NE(std::string(e.what()).find("\"auto\", \"nccl\" and \"symm_mem\""), std::string::npos);
  }
}

}  // namespace
}  // namespace nvfuse
