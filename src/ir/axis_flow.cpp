#include "ir/axis_flow.h"

#include <algorithm>

#include "ir/all_exprs.h"
#include "ir/reshape_flow.h"

namespace nvfuse {

namespace {

AxisFlow none_flowing(int64_t rank) {
  AxisFlow flow;
  flow.to_output.assign(rank, -1);
  flow.summed.assign(rank, false);
  flow.whole.assign(rank, false);
  flow.resized.assign(rank, false);
  return flow;
}

AxisFlow identity(int64_t rank) {
  AxisFlow flow = none_flowing(rank);
  for (int64_t a = 0; a < rank; ++a) {
    flow.to_output[a] = a;
  }
  return flow;
}

// Input axes `dropped` vanish (summed when `sum`), the rest keep their order.
AxisFlow dropping(int64_t rank, const std::vector<int64_t>& dropped, bool sum) {
  AxisFlow flow = none_flowing(rank);
  int64_t next = 0;
  for (int64_t a = 0; a < rank; ++a) {
    const bool gone = std::find(dropped.begin(), dropped.end(), a) != dropped.end();
    flow.to_output[a] = gone ? -1 : next++;
    flow.summed[a] = gone && sum;
  }
  return flow;
}

// Whether a slice's bounds take all of `id`: from 0 by 1 to its extent or
// past it. An end at or past 2^40 is past any axis a device can hold, the
// idiom for "to the end" when the extent is symbolic.
bool takes_whole_axis(
    const Scalar* start, const Scalar* end, const Scalar* step, const IterDomain* id) {
  if (!start->is_constant_int(0) || !step->is_constant_int(1)) {
    return false;
  }
  const Scalar* extent = id->logical_extent();
  const auto last = end->constant_int();
  if (end == extent || (last.has_value() && *last >= (int64_t{1} << 40))) {
    return true;
  }
  return last.has_value() && extent->constant_int().has_value() && *last >= *extent->constant_int();
}

// A slice keeps the axes it takes whole; the others are cut from the
// global axis, so they must be whole.
AxisFlow slice_flow(const Expr& expr) {
  const auto* in = expr.input(0)->as<TensorView>();
  AxisFlow flow = identity(in->rank());
  for (int64_t a = 0; a < in->rank(); ++a) {
    flow.whole[a] = !takes_whole_axis(expr.input(1 + 3 * a)->as<Scalar>(),
        expr.input(2 + 3 * a)->as<Scalar>(), expr.input(3 + 3 * a)->as<Scalar>(), in->logical()[a]);
  }
  return flow;
}

// Cat and pad keep every axis but the ones they grow, which hold elements
// of several inputs (or padding) and so must be whole: cat's dim, and the
// axes pad widens or crops.
AxisFlow growing_flow(const Expr& expr, size_t input) {
  const auto* in = expr.input(input)->as<TensorView>();
  AxisFlow flow = identity(in->rank());
  for (int64_t a = 0; a < in->rank(); ++a) {
    if (expr.is<CatOp>()) {
      flow.whole[a] = a == expr.as<CatOp>()->dim();
    } else {
      flow.whole[a] = !expr.input(2 + 2 * a)->as<Scalar>()->is_constant_int(0) ||
          !expr.input(3 + 2 * a)->as<Scalar>()->is_constant_int(0);
    }
  }
  return flow;
}

// Attention: batch and head axes (0, 1) flow to every 4-D output and to the
// logsumexp; the forward's query length flows to its output and logsumexp.
// Key length and head size take part in every score, so they are whole.
AxisFlow attention_flow(const Expr& expr, size_t input, size_t output) {
  const auto* in = expr.input(input)->as<TensorView>();
  const auto* out = expr.output(output)->as<TensorView>();
  AxisFlow flow = none_flowing(in->rank());
  std::fill(flow.whole.begin(), flow.whole.end(), true);
  const bool attention_operand = in->rank() >= 3;  // not a philox state
  const bool attention_result = out->rank() >= 3;
  if (!attention_operand) {
    return flow;
  }
  for (int64_t a = 0; a < 2; ++a) {
    flow.whole[a] = false;
    flow.to_output[a] = attention_result ? a : -1;
  }
  if (expr.is<SdpaFwdOp>() && input == 0) {
    flow.whole[2] = false;
    flow.to_output[2] = attention_result ? 2 : -1;
  }
  return flow;
}

}  // namespace

std::optional<AxisFlow> axis_flow(const Expr& expr, size_t input, size_t output) {
  const auto* in = expr.input(input)->as<TensorView>();
  const auto* out = expr.output(output)->as<TensorView>();
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
      AxisFlow flow = none_flowing(rank);
      int64_t a = 0;
      for (int64_t o = 0; o < static_cast<int64_t>(is_new.size()); ++o) {
        if (!is_new[o]) {
          flow.to_output[a++] = o;
        }
      }
      return flow;
    }
    case ExprKind::ReductionOp: {
      AxisFlow flow = dropping(rank, reduced_axes_of(expr), true);
      flow.combine = expr.as<ReductionOp>()->op();
      return flow;
    }
    case ExprKind::VarMeanOp:
      return dropping(rank, reduced_axes_of(expr), true);
    case ExprKind::SqueezeOp:
      return dropping(rank, expr.as<SqueezeOp>()->dims(), false);
    case ExprKind::PermuteOp: {
      const auto& dims = expr.as<PermuteOp>()->dims();
      AxisFlow flow = none_flowing(rank);
      for (int64_t o = 0; o < static_cast<int64_t>(dims.size()); ++o) {
        flow.to_output[dims[o]] = o;
      }
      return flow;
    }
    case ExprKind::ReshapeOp:
      return reshape_flow(*in, *out);
    case ExprKind::SliceOp:
      return slice_flow(expr);
    case ExprKind::CatOp:
    case ExprKind::PadOp:
      if (expr.is<PadOp>() && input != 0) {
        return std::nullopt;  // the pad value
      }
      return growing_flow(expr, input);
    case ExprKind::SdpaFwdOp:
    case ExprKind::SdpaBwdOp:
      return attention_flow(expr, input, output);
    case ExprKind::LinearOp: {
      // in [..., K] @ weight[N, K].T + bias[N] -> [..., N].
      const int64_t last = out->rank() - 1;
      if (input == 0) {
        AxisFlow flow = identity(rank);
        flow.to_output.back() = -1;
        flow.summed.back() = true;
        return flow;
      }
      AxisFlow flow = none_flowing(rank);
      if (rank == 2) {
        flow.to_output[0] = last;
      } else if (rank == 1 && input == 2) {
        flow.to_output[0] = last;
      }
      if (input == 1) {
        flow.summed.back() = true;
      }
      return flow;
    }
    case ExprKind::MatmulOp: {
      // a [..., M, K] @ b [K, N] -> [..., M, N]; batched right operands
      // are not followed.
      const auto* a = expr.input(0)->as<TensorView>();
      const auto* b = expr.input(1)->as<TensorView>();
      if (a->rank() < 2 || b->rank() != 2 || out->rank() != a->rank()) {
        return std::nullopt;
      }
      if (input == 0) {
        AxisFlow flow = identity(rank);
        flow.to_output.back() = -1;
        flow.summed.back() = true;
        return flow;
      }
      AxisFlow flow = none_flowing(rank);
      flow.to_output[1] = out->rank() - 1;
      flow.summed[0] = true;
      return flow;
    }
    default:
      return std::nullopt;
  }
}

bool keeps_sharding(const AxisFlow& flow, int64_t axis, const TensorView& in, const TensorView& out,
    int64_t devices) {
  const int64_t c = flow.to_output[axis];
  if (c < 0 || flow.whole[axis]) {
    return false;
  }
  if (!flow.resized[axis]) {
    return true;
  }
  const auto divides = [devices](const IterDomain* id) {
    const auto n = id->logical_extent()->constant_int();
    return n.has_value() && *n % devices == 0;
  };
  return divides(in.logical()[axis]) && divides(out.logical()[c]);
}

int64_t source_axis(
    const AxisFlow& flow, const TensorView& in, const TensorView& out, int64_t c, int64_t devices) {
  if (c < 0) {
    return -1;
  }
  for (int64_t b = 0; b < static_cast<int64_t>(flow.to_output.size()); ++b) {
    if (flow.to_output[b] == c && keeps_sharding(flow, b, in, out, devices)) {
      return b;
    }
  }
  return -1;
}

}  // namespace nvfuse
