// One axis of a tensor: an extent, whether it iterates, broadcasts or
// reduces, and how it is parallelized. Derived axes are defined by Split and
// Merge exprs from the logical ones.
#pragma once

#include <string>

#include "ir/parallel_type.h"
#include "ir/scalar.h"
#include "ir/statement.h"

namespace nvfuse {

enum class IterType { kIteration, kBroadcast, kReduction };

class IterDomain : public Val {
 public:
  static constexpr ValKind kValKind = ValKind::kIterDomain;

  // A broadcast axis has extent 1; an *expanded* broadcast has extent 1 in
  // memory and `expanded_extent` in the logical shape (stride 0).
  IterDomain(Fusion* fusion, Scalar* extent, IterType iter_type, Scalar* expanded_extent = nullptr,
      ParallelType parallel_type = ParallelType::Serial);

  Scalar* extent() const { return extent_; }
  // Multi-device localization only (multidevice/localize.h): a sharded
  // axis of a compute segment takes its per-device extent.
  void set_extent(Scalar* extent) { extent_ = extent; }
  Scalar* expanded_extent() const { return expanded_extent_; }
  // The logical size of the axis: the expanded extent if any, else extent.
  Scalar* logical_extent() const {
    return expanded_extent_ != nullptr ? expanded_extent_ : extent_;
  }
  IterType iter_type() const { return iter_type_; }
  bool is_broadcast() const { return iter_type_ == IterType::kBroadcast; }
  bool is_expanded() const { return expanded_extent_ != nullptr; }
  bool is_reduction() const { return iter_type_ == IterType::kReduction; }

  ParallelType parallel_type() const { return parallel_type_; }
  void parallelize(ParallelType type) { parallel_type_ = type; }
  bool is_device_parallel() const { return nvfuse::is_device_parallel(parallel_type_); }

  // "iS3{i0}", "bS4{1}", "bS5{1 ex i2}", "iDIDx6{4}".
  std::string to_string() const;

 private:
  Scalar* extent_;
  Scalar* expanded_extent_;
  IterType iter_type_;
  ParallelType parallel_type_;
};

}  // namespace nvfuse
