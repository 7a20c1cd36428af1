#include "ir/iter_domain.h"

#include "ir/errors.h"

namespace nvfuse {

IterDomain::IterDomain(Fusion* fusion, Scalar* extent, IterType iter_type, Scalar* expanded_extent,
    ParallelType parallel_type)
    : Val(fusion, ValKind::kIterDomain, DataType::Index),
      extent_(extent),
      expanded_extent_(expanded_extent),
      iter_type_(iter_type),
      parallel_type_(parallel_type) {
  NVFUSE_ASSERT(extent_ != nullptr, "an IterDomain needs an extent");
  NVFUSE_ASSERT(expanded_extent_ == nullptr || iter_type_ == IterType::kBroadcast,
      "only broadcast axes can be expanded");
}

std::string IterDomain::to_string() const {
  std::string text;
  switch (iter_type_) {
    case IterType::kIteration:
      text = "i";
      break;
    case IterType::kBroadcast:
      text = "b";
      break;
    case IterType::kReduction:
      text = "r";
      break;
  }
  text += parallel_type_ == ParallelType::Serial ? "S" : name_of(parallel_type_);
  text += std::to_string(number()) + "{" + extent_->to_string();
  if (expanded_extent_ != nullptr) {
    text += " ex " + expanded_extent_->to_string();
  }
  return text + "}";
}

}  // namespace nvfuse
