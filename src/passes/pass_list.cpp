#include "passes/pass_list.h"

#include "ir/dump.h"
#include "ir/fusion.h"
#include "passes/duplicate_shared_iotas.h"
#include "passes/propagate_shardings.h"
#include "passes/relabel_size_one_reshapes.h"
#include "passes/remove_redundant_casts.h"
#include "passes/split_sharded_variances.h"
#include "passes/squeeze_trivial_reductions.h"

namespace nvfuse {

namespace {

struct Pass {
  const char* name;
  void (*run)(Fusion&);
};

// The pre-segmentation passes, in order.
constexpr Pass kPresegmentationPasses[] = {
    {"remove_redundant_casts", remove_redundant_casts},
    {"relabel_size_one_reshapes", relabel_size_one_reshapes},
    {"squeeze_trivial_reductions", squeeze_trivial_reductions},
    {"duplicate_shared_iotas", duplicate_shared_iotas},
};

// The passes of a sharded fusion, in order.
constexpr Pass kShardingPasses[] = {
    {"propagate_shardings", propagate_shardings},
    {"split_sharded_variances", split_sharded_variances},
};

template <size_t N>
void run_in_order(const Pass (&passes)[N], Fusion& fusion) {
  const bool dump_each = dump_enabled(DumpOption::preseg_ir);
  for (const Pass& pass : passes) {
    pass.run(fusion);
    if (dump_each) {
      dump(std::string("preseg_ir after ") + pass.name, fusion.to_string());
    }
  }
}

}  // namespace

void run_presegmentation_passes(Fusion& fusion) { run_in_order(kPresegmentationPasses, fusion); }

void run_sharding_passes(Fusion& fusion) { run_in_order(kShardingPasses, fusion); }

}  // namespace nvfuse
