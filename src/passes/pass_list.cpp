#include "passes/pass_list.h"

#include "ir/dump.h"
#include "ir/fusion.h"
#include "passes/duplicate_shared_iotas.h"
#include "passes/relabel_size_one_reshapes.h"
#include "passes/remove_redundant_casts.h"
#include "passes/squeeze_trivial_reductions.h"

namespace nvfuse {

namespace {

struct Pass {
  const char* name;
  void (*run)(Fusion&);
};

// The pre-segmentation passes, in order. Later issues add sharding
// propagation, resharding decomposition, alias preparation and
// allocation-order inference here.
constexpr Pass kPresegmentationPasses[] = {
    {"remove_redundant_casts", remove_redundant_casts},
    {"relabel_size_one_reshapes", relabel_size_one_reshapes},
    {"squeeze_trivial_reductions", squeeze_trivial_reductions},
    {"duplicate_shared_iotas", duplicate_shared_iotas},
};

}  // namespace

void run_presegmentation_passes(Fusion& fusion) {
  const bool dump_each = dump_enabled(DumpOption::preseg_ir);
  for (const Pass& pass : kPresegmentationPasses) {
    pass.run(fusion);
    if (dump_each) {
      dump(std::string("preseg_ir after ") + pass.name, fusion.to_string());
    }
  }
}

}  // namespace nvfuse
