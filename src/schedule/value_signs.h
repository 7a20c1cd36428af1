// Signs of values that some patterns guarantee, so that code generation can
// pick cheaper math that is accurate only on that range (see
// nvfuse::exp_nonpositive in codegen/device_reduction.cuh). The rules are
// few and exact; anything else is "not known".
//
//   never positive:  y - broadcast(max(y))      (the max re-expanded over
//                                                the axes it reduced)
//                    a - b, a never positive and b never negative
//   never negative:  broadcast(v), v never negative
//                    log(v), v at least one
//   at least one:    broadcast(v), v at least one
//                    sum(exp(y - broadcast(max(y))))   (over the max's
//                                                axes, so each sum holds
//                                                exp(0) = 1: softmax's
//                                                divisor, log-softmax's
//                                                log-sum; below 2^31 too)
//
// NaN inputs give NaN either way; the rules speak of the other values.
#pragma once

#include "ir/all_exprs.h"

namespace nvfuse {

bool is_never_positive(const Val* v);
bool is_never_negative(const Val* v);
bool is_at_least_one(const Val* v);

}  // namespace nvfuse
