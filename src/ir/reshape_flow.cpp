#include "ir/reshape_flow.h"

#include "ir/tensor_view.h"

namespace nvfuse {

namespace {

bool same_extent(const Scalar* a, const Scalar* b) {
  return a == b || (a->constant_int().has_value() && a->constant_int() == b->constant_int());
}

struct Group {
  int64_t in_begin, in_end, out_begin, out_end;
};

// The groups from the front, stopping at the first that constant and
// shared extents cannot match.
std::vector<Group> groups_of(
    const std::vector<IterDomain*>& in, const std::vector<IterDomain*>& out) {
  std::vector<Group> groups;
  int64_t i = 0;
  int64_t o = 0;
  const auto in_rank = static_cast<int64_t>(in.size());
  const auto out_rank = static_cast<int64_t>(out.size());
  while (i < in_rank && o < out_rank) {
    const Scalar* a = in[i]->logical_extent();
    const Scalar* b = out[o]->logical_extent();
    if (same_extent(a, b)) {
      groups.push_back({i, i + 1, o, o + 1});
      ++i;
      ++o;
      continue;
    }
    if (!a->constant_int().has_value() || !b->constant_int().has_value()) {
      break;
    }
    Group g{i, i + 1, o, o + 1};
    int64_t in_count = *a->constant_int();
    int64_t out_count = *b->constant_int();
    while (in_count != out_count) {
      const bool grow_in = in_count < out_count;
      const auto& side = grow_in ? in : out;
      int64_t& end = grow_in ? g.in_end : g.out_end;
      if (end >= static_cast<int64_t>(side.size()) ||
          !side[end]->logical_extent()->constant_int().has_value()) {
        return groups;
      }
      (grow_in ? in_count : out_count) *= *side[end]->logical_extent()->constant_int();
      ++end;
    }
    groups.push_back(g);
    i = g.in_end;
    o = g.out_end;
  }
  return groups;
}

// The first axis in [begin, end) whose extent is not the constant 1.
int64_t leading(const std::vector<IterDomain*>& axes, int64_t begin, int64_t end) {
  for (int64_t a = begin; a < end; ++a) {
    if (!axes[a]->logical_extent()->is_constant_int(1)) {
      return a;
    }
  }
  return begin;
}

}  // namespace

AxisFlow reshape_flow(const TensorView& in, const TensorView& out) {
  const auto& in_axes = in.logical();
  const auto& out_axes = out.logical();
  const auto rank = static_cast<size_t>(in.rank());
  AxisFlow flow;
  flow.to_output.assign(rank, -1);
  flow.summed.assign(rank, false);
  flow.whole.assign(rank, true);
  flow.resized.assign(rank, false);
  for (const Group& g : groups_of(in_axes, out_axes)) {
    const int64_t lead_in = leading(in_axes, g.in_begin, g.in_end);
    const int64_t lead_out = leading(out_axes, g.out_begin, g.out_end);
    for (int64_t a = g.in_begin; a < g.in_end; ++a) {
      // Size-1 axes hold nothing to shard; they need not be whole.
      flow.whole[a] = a != lead_in && !in_axes[a]->logical_extent()->is_constant_int(1);
    }
    flow.to_output[lead_in] = lead_out;
    flow.resized[lead_in] =
        !same_extent(in_axes[lead_in]->logical_extent(), out_axes[lead_out]->logical_extent());
  }
  return flow;
}

}  // namespace nvfuse
