#include "multidevice/runtime/host/lower_allgather_gemm.h"

#include <ATen/ATen.h>

#include "ir/all_exprs.h"
#include "ir/sharding.h"
#include "multidevice/runtime/host/chunk_views.h"
#include "multidevice/runtime/host/gemm_result.h"
#include "multidevice/runtime/host/run_host_instructions.h"
#include "runtime/aten_types.h"

namespace nvfuse {

namespace {

// How the loop cuts A and the result, by the shape of A.
struct Cut {
  ChunkView a_view;
  ChunkView result_view;
  int64_t gathered_axis;
  int64_t fixed_chunks;  // 0: chosen per call; -1: one per index of axis 0
  std::string source;
};

std::optional<Cut> cut_of(const Communication& comm, const TensorView& a, const TensorView& out,
    const StreamAnnotations& annotations) {
  const Sharding sharding = sharding_of(a);
  const std::optional<StreamChunks> asked = annotation_among(annotations, {&out, &a});
  if (comm.axis == 0 && !sharding.whole_axis[0]) {
    if (!asked.has_value()) {
      return Cut{ChunkView::kRows, ChunkView::kInterleaved, 0, 0, "chosen per call"};
    }
    if (asked->axis != 0 || asked->is_logical_axis()) {
      return std::nullopt;
    }
    check_chunks_divide(a, 0, comm.mesh.size(), asked->count);
    return Cut{ChunkView::kRows, ChunkView::kInterleaved, 0, asked->count,
        std::to_string(asked->count) + " from a stream split"};
  }
  if (comm.axis == 1 && sharding.whole_axis[1] && asked.has_value() && asked->axis == 0 &&
      asked->is_logical_axis() && a.rank() >= 3) {
    return Cut{ChunkView::kSelectWhole, ChunkView::kSelect, 1, -1, "axis 0 on stream"};
  }
  return std::nullopt;
}

}  // namespace

const Expr* gemm_after_allgather(const Fusion& fusion, const Communication& comm) {
  if (comm.type != CommunicationType::Allgather) {
    return nullptr;
  }
  const Val* gathered = comm.expr->output(0);
  const std::vector<Expr*> uses = gathered->distinct_uses();
  if (uses.size() != 1 || !is_pipelinable_gemm(*uses[0], /*allow_bias=*/true) ||
      uses[0]->input(0) != gathered || !feeds_only(fusion, *gathered, *uses[0]) ||
      !is_one_sorted_team(comm, *uses[0]->output(0)->as<TensorView>())) {
    return nullptr;
  }
  return uses[0];
}

std::optional<HostLoopProgram> lower_allgather_gemm(
    const Fusion& fusion, const Communication& comm, const StreamAnnotations& annotations) {
  const Expr* found = gemm_after_allgather(fusion, comm);
  if (found == nullptr) {
    return std::nullopt;
  }
  const Expr& gemm = *found;
  const Val* gathered = comm.expr->output(0);
  const auto& a = *comm.tensor;
  const auto& out = *gemm.output(0)->as<TensorView>();
  const std::optional<Cut> cut = cut_of(comm, a, out, annotations);
  if (!cut.has_value()) {
    return std::nullopt;
  }
  HostLoopProgram p;
  p.title = std::string("pipelined Allgather + ") + (gemm.is<LinearOp>() ? "linear" : "matmul");
  p.communication = &comm;
  p.gemm = &gemm;
  p.result_value = &out;
  p.fixed_chunks = cut->fixed_chunks;
  p.chunk_source = cut->source;
  const Slot a_slot = p.add_slot(a.name());
  const Slot b_slot = p.add_slot(gemm.input(1)->as<TensorView>()->name());
  p.inputs = {&a, gemm.input(1)};
  Slot bias_slot = -1;
  if (gemm.inputs().size() == 3) {
    bias_slot = p.add_slot(gemm.input(2)->as<TensorView>()->name());
    p.inputs.push_back(gemm.input(2));
  }
  const Slot g_slot = p.add_slot(gathered->as<TensorView>()->name());
  p.result = p.add_slot(out.name());
  const Slot a_chunk = p.add_slot(a.name() + "_i");
  const Slot g_chunk = p.add_slot(gathered->as<TensorView>()->name() + "_i");
  const Slot out_chunk = p.add_slot(out.name() + "_i");
  const ChunkView a_view = cut->a_view;
  const std::string a_name = a.name();

  ForChunks loop;
  loop.body = {
      SetWorkerStream{},
      ViewChunk{a_chunk, a_slot, a_view, 0},
      ViewChunk{g_chunk, g_slot, ChunkView::kSelect, 0},
      PostCommunication{&comm, g_chunk, a_chunk},
      WaitCommunication{},
      ViewChunk{out_chunk, p.result, cut->result_view, 0},
      Gemm{&gemm, out_chunk, g_chunk, b_slot, bias_slot},
  };
  p.instructions = {
      GetCurrentStream{},
      Allocate{g_slot, "[chunks, devices, *chunk of " + a_name + "]",
          [=](const HostFrame& f) {
            const at::Tensor& whole = f.slots[a_slot];
            std::vector<int64_t> sizes =
                view_chunk(whole, a_view, 0, f.chunks, f.team->size(), 0, a_name).sizes().vec();
            sizes.insert(sizes.begin(), {f.chunks, f.team->size()});
            return at::empty(sizes, whole.options());
          }},
      allocate_gemm_result(p, a_slot, b_slot, gemm, cut->gathered_axis, /*gathered=*/true),
      WaitStreams{false},
      std::move(loop),
      RestoreStream{},
      WaitStreams{true},
  };
  return p;
}

}  // namespace nvfuse
