// Text form of the fusion IR, for NVFUSE_DUMP=fusion_ir, fd.fusion_ir() and
// tests. One line per expr: `T2_Float[iS4{i0}] = sin(T1)`.
#pragma once

#include <string>

namespace nvfuse {

class Fusion;
class Expr;
class Val;

std::string print_fusion(const Fusion& fusion);
std::string print_expr(const Expr& expr);
// A Val as an operand: a tensor's name, a scalar's value or name.
std::string print_operand(const Val& val);
// A Val in full: a tensor with its domains, a scalar with its dtype.
std::string print_val(const Val& val);

}  // namespace nvfuse
