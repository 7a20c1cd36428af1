#include "multidevice/axis_flow.h"

#include <algorithm>

#include "ir/all_exprs.h"

namespace nvfuse {

namespace {

AxisFlow identity(int64_t rank) {
  AxisFlow flow;
  for (int64_t a = 0; a < rank; ++a) {
    flow.to_output.push_back(a);
  }
  flow.summed.assign(rank, false);
  return flow;
}

// Input axes `dropped` vanish (summed when `sum`), the rest keep their order.
AxisFlow dropping(int64_t rank, const std::vector<int64_t>& dropped, bool sum) {
  AxisFlow flow;
  int64_t next = 0;
  for (int64_t a = 0; a < rank; ++a) {
    const bool gone = std::find(dropped.begin(), dropped.end(), a) != dropped.end();
    flow.to_output.push_back(gone ? -1 : next++);
    flow.summed.push_back(gone && sum);
  }
  return flow;
}

}  // namespace

std::optional<AxisFlow> axis_flow(const Expr& expr, size_t input) {
  const auto* in = expr.input(input)->as<TensorView>();
  const auto* out = expr.output(0)->as<TensorView>();
  const int64_t rank = in->rank();
  switch (expr.kind()) {
    case ExprKind::PointwiseOp:
    case ExprKind::CastOp:
    case ExprKind::ExpandOp:
      if (rank == out->rank()) {
        return identity(rank);
      }
      if (rank == 0) {
        return AxisFlow{};
      }
      return std::nullopt;
    case ExprKind::BroadcastOp: {
      const auto& is_new = expr.as<BroadcastOp>()->is_broadcast_dim();
      AxisFlow flow;
      for (int64_t o = 0; o < static_cast<int64_t>(is_new.size()); ++o) {
        if (!is_new[o]) {
          flow.to_output.push_back(o);
          flow.summed.push_back(false);
        }
      }
      return flow;
    }
    case ExprKind::ReductionOp: {
      AxisFlow flow = dropping(rank, reduced_axes_of(expr), true);
      flow.combine = expr.as<ReductionOp>()->op();
      return flow;
    }
    case ExprKind::SqueezeOp:
      return dropping(rank, expr.as<SqueezeOp>()->dims(), false);
    case ExprKind::PermuteOp: {
      const auto& dims = expr.as<PermuteOp>()->dims();
      AxisFlow flow;
      flow.to_output.assign(rank, -1);
      flow.summed.assign(rank, false);
      for (int64_t o = 0; o < static_cast<int64_t>(dims.size()); ++o) {
        flow.to_output[dims[o]] = o;
      }
      return flow;
    }
    case ExprKind::LinearOp: {
      // in [..., K] @ weight[N, K].T + bias[N] -> [..., N].
      const int64_t last = out->rank() - 1;
      if (input == 0) {
        AxisFlow flow = identity(rank);
        flow.to_output.back() = -1;
        flow.summed.back() = true;
        return flow;
      }
      AxisFlow flow;
      flow.to_output = rank == 2 ? std::vector<int64_t>{last, -1}
                                 : std::vector<int64_t>(rank, rank == 1 && input == 2 ? last : -1);
      flow.summed.assign(rank, false);
      if (input == 1) {
        flow.summed.back() = true;
      }
      return flow;
    }
    case ExprKind::MatmulOp: {
      // 2-D only: a [M, K] @ b [K, N] -> [M, N].
      if (rank != 2 || out->rank() != 2) {
        return std::nullopt;
      }
      AxisFlow flow;
      flow.to_output = input == 0 ? std::vector<int64_t>{0, -1} : std::vector<int64_t>{-1, 1};
      flow.summed = input == 0 ? std::vector<bool>{false, true} : std::vector<bool>{true, false};
      return flow;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace nvfuse
