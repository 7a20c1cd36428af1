// A tensor value in the IR: a TensorDomain plus element type, and the loop
// transforms (split, merge, reorder, parallelize) that schedule or shard it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/device_mesh.h"
#include "ir/tensor_domain.h"

namespace nvfuse {

class TensorView : public Val {
 public:
  static constexpr ValKind kValKind = ValKind::kTensorView;

  // `is_cpu_scalar`: a 0-d tensor that lives on the CPU and is passed to GPU
  // kernels by value.
  TensorView(Fusion* fusion, TensorDomain domain, DataType dtype, bool is_cpu_scalar = false);

  const TensorDomain& domain() const { return domain_; }
  int64_t rank() const { return domain_.rank(); }
  const std::vector<IterDomain*>& logical() const { return domain_.logical(); }
  IterDomain* logical_axis(int64_t axis) const;
  // An axis of the loop domain (negative counts from the end).
  IterDomain* axis(int64_t axis) const;
  int64_t loop_rank() const { return static_cast<int64_t>(domain_.loop().size()); }
  bool is_cpu_scalar() const { return is_cpu_scalar_; }
  // A segment input made by another segment: it takes the producer's
  // layout as it is (kernels read actual strides), so input binding checks
  // no stride order.
  bool any_strides() const { return any_strides_; }
  void set_any_strides(bool any) { any_strides_ = any; }

  // Loop transforms. An inner split makes the inner axis `factor` long; an
  // outer split makes the outer axis `factor` long (e.g. the device count).
  void split(int64_t axis, Scalar* factor, bool inner_split);
  void split(int64_t axis, int64_t factor, bool inner_split = true);
  void outer_split(int64_t axis, int64_t parts) { split(axis, parts, false); }
  void merge(int64_t outer_axis, int64_t inner_axis);
  // `new_order[i]` is the current loop position of the new axis i.
  void reorder(const std::vector<int64_t>& new_order);

  void set_allocation_domain(
      std::vector<IterDomain*> allocation, std::vector<std::optional<bool>> contiguity);
  void set_loop_domain(std::vector<IterDomain*> loop);
  // The stride_order of a permuted allocation domain; empty when allocation
  // equals logical.
  std::vector<int64_t> stride_order() const;

  const std::optional<DeviceMesh>& device_mesh() const { return mesh_; }
  void set_device_mesh(DeviceMesh mesh) { mesh_ = std::move(mesh); }
  void clear_device_mesh() { mesh_.reset(); }

  // "T3_Float[iS0{i0}, bS1{1}]", with the allocation domain when it differs.
  std::string to_string() const;
  std::string name() const { return "T" + std::to_string(number()); }

 private:
  TensorDomain domain_;
  bool is_cpu_scalar_;
  bool any_strides_ = false;
  std::optional<DeviceMesh> mesh_;
};

// The fusion's input tensors, then every tensor its exprs make, in order.
std::vector<TensorView*> tensors_of(const Fusion& fusion);

}  // namespace nvfuse
