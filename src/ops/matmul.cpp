#include "ops/matmul.h"

#include <algorithm>

#include "ir/fusion.h"
#include "ir/matmul_exprs.h"
#include "ops/new_axes.h"

namespace nvfuse {

namespace {

void check_operand(const TensorView* tv, const char* op, const char* what) {
  NVFUSE_TYPE_CHECK(is_floating(tv->dtype()) && tv->dtype() != DataType::Float8_e4m3fn &&
          tv->dtype() != DataType::Float8_e5m2,
      op, ": ", what, " must be Double, Float, Half or BFloat16, got ", tv->dtype());
}

// Both GEMM operands floating point, of one dtype.
void check_operand_pair(const TensorView* a, const TensorView* b, const char* op) {
  check_operand(a, op, "the first operand");
  check_operand(b, op, "the second operand");
  NVFUSE_TYPE_CHECK(a->dtype() == b->dtype(), op, ": the operands have dtypes ", a->dtype(),
      " and ", b->dtype(), "; cast them to one dtype first");
}

}  // namespace

TensorView* matmul(TensorView* a, TensorView* b) {
  check_operand_pair(a, b, "matmul");
  NVFUSE_CHECK(a->rank() >= 1 && b->rank() >= 1,
      "matmul: both operands need at least one axis, got ranks ", a->rank(), " and ", b->rank());
  Fusion* fusion = a->fusion();
  const auto& ax = a->logical();
  const auto& bx = b->logical();
  // Contracted axes: a's last, b's second-to-last (its only one if 1-D).
  const IterDomain* a_k = ax.back();
  const IterDomain* b_k = b->rank() == 1 ? bx[0] : bx[bx.size() - 2];
  // Batch axes broadcast right-aligned.
  const int64_t a_batch = std::max<int64_t>(a->rank() - 2, 0);
  const int64_t b_batch = std::max<int64_t>(b->rank() - 2, 0);
  const int64_t batch = std::max(a_batch, b_batch);
  std::vector<IterDomain*> axes;
  std::vector<std::pair<const IterDomain*, const IterDomain*>> batch_pairs;
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t ia = i - (batch - a_batch);
    const int64_t ib = i - (batch - b_batch);
    const IterDomain* from_a = ia >= 0 ? ax[ia] : nullptr;
    const IterDomain* from_b = ib >= 0 ? bx[ib] : nullptr;
    const IterDomain* pick = from_a;
    if (pick == nullptr || (pick->is_broadcast() && from_b != nullptr)) {
      pick = from_b;
    }
    if (from_a != nullptr && from_b != nullptr && !from_a->is_broadcast() &&
        !from_b->is_broadcast()) {
      batch_pairs.emplace_back(from_a, from_b);
    }
    axes.push_back(copy_axis(fusion, pick));
  }
  if (a->rank() >= 2) {
    axes.push_back(copy_axis(fusion, ax[ax.size() - 2]));
  }
  if (b->rank() >= 2) {
    axes.push_back(copy_axis(fusion, bx.back()));
  }
  auto* out = fusion->create<TensorView>(TensorDomain(axes), a->dtype());
  require_same_extent(a_k->logical_extent(), b_k->logical_extent(), out, "matmul",
      "the contracted sizes of the operands differ");
  for (const auto& [x, y] : batch_pairs) {
    require_same_extent(x->logical_extent(), y->logical_extent(), out, "matmul",
        "the batch sizes of the operands differ");
  }
  fusion->create<MatmulOp>(ExprFields{{a, b}, {out}, {}});
  return out;
}

TensorView* linear(TensorView* in, TensorView* weight, TensorView* bias) {
  check_operand(in, "linear", "the input");
  check_operand(weight, "linear", "the weight");
  NVFUSE_TYPE_CHECK(weight->dtype() == in->dtype(), "linear: the weight has dtype ",
      weight->dtype(), " but the input has dtype ", in->dtype());
  NVFUSE_CHECK(in->rank() >= 1, "linear: the input needs at least one axis");
  NVFUSE_CHECK(weight->rank() == 1 || weight->rank() == 2,
      "linear: the weight must be 1-D or 2-D (out_features, in_features), got "
      "rank ",
      weight->rank());
  Fusion* fusion = in->fusion();
  std::vector<IterDomain*> axes;
  for (int64_t i = 0; i + 1 < in->rank(); ++i) {
    axes.push_back(copy_axis(fusion, in->logical()[i]));
  }
  if (weight->rank() == 2) {
    axes.push_back(copy_axis(fusion, weight->logical()[0]));
  }
  auto* out = fusion->create<TensorView>(TensorDomain(axes), in->dtype());
  require_same_extent(in->logical().back()->logical_extent(),
      weight->logical().back()->logical_extent(), out, "linear",
      "the input's last size and the weight's in_features differ");
  std::vector<Val*> inputs = {in, weight};
  if (bias != nullptr) {
    check_operand(bias, "linear", "the bias");
    NVFUSE_TYPE_CHECK(bias->dtype() == in->dtype(), "linear: the bias has dtype ", bias->dtype(),
        " but the input has dtype ", in->dtype());
    NVFUSE_CHECK(bias->rank() <= 1, "linear: the bias must be 0-D or 1-D, got rank ", bias->rank());
    if (bias->rank() == 1 && weight->rank() == 2 && !bias->logical()[0]->is_broadcast()) {
      require_same_extent(bias->logical()[0]->logical_extent(),
          weight->logical()[0]->logical_extent(), out, "linear",
          "the bias size and the weight's out_features differ");
    }
    inputs.push_back(bias);
  }
  fusion->create<LinearOp>(ExprFields{std::move(inputs), {out}, {}});
  return out;
}

TensorView* grouped_mm(TensorView* a, TensorView* b, TensorView* offsets) {
  check_operand_pair(a, b, "grouped_mm");
  NVFUSE_TYPE_CHECK(offsets->dtype() == DataType::Int32 || offsets->dtype() == DataType::Int,
      "grouped_mm: offsets must be Int32 (or Int), got ", offsets->dtype());
  NVFUSE_CHECK(
      offsets->rank() == 1, "grouped_mm: offsets must be 1-D [groups], got rank ", offsets->rank());
  const bool cuts_m = a->rank() == 2 && b->rank() == 3;
  const bool cuts_n = a->rank() == 3 && b->rank() == 2;
  const bool cuts_k = a->rank() == 2 && b->rank() == 2;
  NVFUSE_CHECK(cuts_m || cuts_n || cuts_k,
      "grouped_mm: expected operand ranks (2, 3), (3, 2) or (2, 2), got (", a->rank(), ", ",
      b->rank(), "); batched 3-D operands are a matmul");
  Fusion* fusion = a->fusion();
  const auto& ax = a->logical();
  const auto& bx = b->logical();
  std::vector<IterDomain*> axes;
  if (cuts_k) {
    axes.push_back(copy_axis(fusion, offsets->logical()[0]));
  }
  axes.push_back(copy_axis(fusion, ax[ax.size() - 2]));
  axes.push_back(copy_axis(fusion, bx.back()));
  auto* out = fusion->create<TensorView>(TensorDomain(axes), a->dtype());
  require_same_extent(ax.back()->logical_extent(), bx[bx.size() - 2]->logical_extent(), out,
      "grouped_mm", "the contracted sizes of the operands differ");
  if (!cuts_k) {
    const IterDomain* groups = cuts_m ? bx[0] : ax[0];
    require_same_extent(groups->logical_extent(), offsets->logical()[0]->logical_extent(), out,
        "grouped_mm", "the operand's group count and the offsets' size differ");
  }
  fusion->create<GroupedMmOp>(ExprFields{{a, b, offsets}, {out}, {}});
  return out;
}

}  // namespace nvfuse
