// A variance (var_mean, and var and welford built on it) over an axis
// sharded across devices cannot be one local reduction plus one
// collective: each device's (var, mean) of its shard do not add up. This
// pass rewrites such a var_mean into two sums that do, as torch's
// two-pass variance: mean = sum(x) / N, then var = sum((x - mean)^2) /
// (N - correction), each sum over the sharded axis lowered to a local sum
// plus an Allreduce (or ReduceScatter, or Reduce). Two small collectives
// of the reduced size, numerically as stable as the single-device kernel's
// (no sum-of-squares cancellation). Half-precision inputs are summed in
// fp32, as the single-device var_mean accumulates.
#pragma once

#include "ir/fusion.h"

namespace nvfuse {

// `fusion` must have gone through propagate_shardings; the new tensors
// get their shardings the same way, and the rewritten var and mean keep
// the ones the old outputs had. Complex inputs are left alone (the
// lowering then names them as unsupported).
void split_sharded_variances(Fusion& fusion);

}  // namespace nvfuse
