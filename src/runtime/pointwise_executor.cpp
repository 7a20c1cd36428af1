#include "runtime/pointwise_executor.h"

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdlib>
#include <cstring>
#include <iostream>

#include "ir/allocation_strides.h"
#include "ir/dump.h"
#include "runtime/output_allocation.h"
#include "runtime/reference_evaluator.h"

namespace nvfuse {

namespace {

TensorArg tensor_arg_of(const at::Tensor& t) {
  return {from_aten(t.scalar_type()), t.sizes().vec(), t.strides().vec(),
          reinterpret_cast<uint64_t>(t.data_ptr())};
}

template <typename T>
void store(char* dst, T value) {
  std::memcpy(dst, &value, sizeof(value));
}

// `value` as the kernel's `dtype` parameter expects its bytes.
void write_value(char* dst, const ScalarValue& value, DataType dtype) {
  switch (dtype) {
    case DataType::Double:
      return store(dst, value.as_double());
    case DataType::Float:
      return store(dst, static_cast<float>(value.as_double()));
    case DataType::Half:
      return store(dst, c10::Half(static_cast<float>(value.as_double())).x);
    case DataType::BFloat16:
      return store(dst, c10::BFloat16(static_cast<float>(value.as_double())).x);
    case DataType::Int:
    case DataType::Index:
      return store(dst, value.as_int());
    case DataType::Int32:
      return store(dst, static_cast<int32_t>(value.as_int()));
    case DataType::Bool:
      return store(dst, static_cast<uint8_t>(value.as_bool() ? 1 : 0));
    default:
      NVFUSE_ASSERT(false, "cannot pass a ", dtype, " value to a kernel");
  }
}

void write_index(char* dst, int64_t value, size_t size) {
  if (size == 4) {
    store(dst, static_cast<int32_t>(value));
  } else {
    store(dst, value);
  }
}

bool poison_outputs() {
  static const bool poison = [] {
    const char* env = std::getenv("NVFUSE_POISON_OUTPUTS");
    return env != nullptr && std::string(env) == "1";
  }();
  return poison;
}

// Fills an output with a value no correct kernel leaves behind, so that tests
// catch elements the kernel never writes.
void poison(at::Tensor& t) {
  if (at::isFloatingType(t.scalar_type())) {
    t.fill_(std::numeric_limits<double>::quiet_NaN());
  } else if (t.scalar_type() != at::kBool) {
    t.fill_(-123);
  }
}

std::mutex tuning_mutex;
PointwiseTuning& tuning_storage() {
  static PointwiseTuning tuning;
  return tuning;
}

}  // namespace

void set_pointwise_tuning(const PointwiseTuning& tuning) {
  NVFUSE_CHECK(
      tuning.block_size > 0 && tuning.block_size <= 1024 &&
          tuning.block_size % 32 == 0,
      "block_size must be a multiple of 32 up to 1024");
  NVFUSE_CHECK(
      tuning.max_unroll >= 1 && tuning.elements_per_thread >= 1,
      "max_unroll and elements_per_thread must be at least 1");
  std::lock_guard<std::mutex> lock(tuning_mutex);
  tuning_storage() = tuning;
}

PointwiseTuning pointwise_tuning() {
  std::lock_guard<std::mutex> lock(tuning_mutex);
  return tuning_storage();
}

std::unique_ptr<PointwiseExecutor> PointwiseExecutor::try_create(
    const Fusion& fusion,
    std::string* why_not) {
  auto analysis = analyze_pointwise(fusion, why_not);
  if (!analysis.has_value()) {
    return nullptr;
  }
  return std::unique_ptr<PointwiseExecutor>(
      new PointwiseExecutor(fusion, std::move(*analysis)));
}

PointwiseExecutor::PointwiseExecutor(
    const Fusion& fusion,
    PointwiseAnalysis analysis)
    : fusion_(fusion), analysis_(std::move(analysis)) {
  for (size_t i = 0; i < fusion_.inputs().size(); ++i) {
    input_positions_.emplace(fusion_.inputs()[i], i);
  }
  const auto& written = analysis_.outputs;
  for (const Val* out : fusion_.outputs()) {
    auto it = std::find(written.begin(), written.end(), out);
    output_slots_.push_back(
        it == written.end()
            ? -1  // a fusion input, returned as is
            : static_cast<int>(analysis_.inputs.size() + (it - written.begin())));
  }
}

std::vector<TensorArg> PointwiseExecutor::input_args(
    const std::vector<Argument>& args) const {
  std::vector<TensorArg> inputs;
  for (const TensorView* tv : analysis_.inputs) {
    inputs.push_back(tensor_arg_of(std::get<at::Tensor>(argument_of(args, tv))));
  }
  return inputs;
}

namespace {

DeviceInfo device_info_of(c10::Device device) {
  if (!device.is_cuda()) {
    return DeviceInfo{};  // code for a CPU stand-in: default to an H100
  }
  const auto& props = cuda_driver::properties(device.index());
  return DeviceInfo{props.sm_count, props.arch};
}

}  // namespace

std::optional<std::vector<std::vector<int64_t>>> PointwiseExecutor::output_sizes(
    BoundInputs& bound) const {
  std::vector<std::vector<int64_t>> sizes;
  for (const TensorView* tv : analysis_.outputs) {
    std::vector<int64_t> shape;
    for (const IterDomain* id : tv->logical()) {
      auto size = bound.extents.evaluate(id->logical_extent());
      if (!size.has_value()) {
        return std::nullopt;
      }
      shape.push_back(size->as_int());
    }
    sizes.push_back(std::move(shape));
  }
  return sizes;
}

PointwiseExecutor::Variant& PointwiseExecutor::variant_for(
    const PointwiseParams& params) {
  for (const auto& variant : variants_) {
    if (variant->params == params) {
      return *variant;
    }
  }
  auto variant = std::make_unique<Variant>(
      Variant{params, generate_pointwise_kernel(fusion_, analysis_, params)});
  if (dump_enabled(DumpOption::params)) {
    dump("params", params.to_string() + "\n");
  }
  if (dump_enabled(DumpOption::cuda_kernel)) {
    dump("cuda_kernel", variant->source.code);
  }
  variants_.push_back(std::move(variant));
  return *variants_.back();
}

std::string PointwiseExecutor::cuda_code_for(
    const std::vector<Argument>& args,
    BoundInputs& bound) {
  auto sizes = output_sizes(bound);
  NVFUSE_CHECK_AS(
      ErrorKind::kUnsupported, sizes.has_value(),
      "the output sizes of this fusion are not known before running it");
  std::vector<TensorArg> outputs;
  for (size_t i = 0; i < analysis_.outputs.size(); ++i) {
    const TensorView* tv = analysis_.outputs[i];
    // The caching allocator returns blocks aligned far beyond 16 bytes.
    outputs.push_back({tv->dtype(), (*sizes)[i],
                       strides_for_allocation(*tv, (*sizes)[i]), 0});
  }
  const PointwiseSchedule schedule = schedule_pointwise(
      analysis_, input_args(args), outputs, device_info_of(bound.device),
      pointwise_tuning());
  std::lock_guard<std::mutex> lock(mutex_);
  return variant_for(schedule.params).source.code;
}

std::string PointwiseExecutor::last_cuda_code() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_ == nullptr ? std::string() : last_->source.code;
}

std::optional<std::vector<at::Tensor>> PointwiseExecutor::run(
    const std::vector<Argument>& args,
    BoundInputs& bound) {
  auto sizes = output_sizes(bound);
  if (!sizes.has_value()) {
    return std::nullopt;
  }
  const c10::Device device = bound.device;
  const c10::DeviceGuard guard(device);
  std::vector<at::Tensor> tensors;
  for (const TensorView* tv : analysis_.inputs) {
    tensors.push_back(std::get<at::Tensor>(argument_of(args, tv)));
  }
  std::vector<TensorArg> outputs;
  for (size_t i = 0; i < analysis_.outputs.size(); ++i) {
    at::Tensor out = allocate_output(
        *analysis_.outputs[i], (*sizes)[i], at::TensorOptions().device(device));
    if (poison_outputs()) {
      poison(out);
    }
    tensors.push_back(out);
    outputs.push_back(tensor_arg_of(out));
  }

  const PointwiseSchedule schedule = schedule_pointwise(
      analysis_, input_args(args), outputs, device_info_of(device),
      pointwise_tuning());
  Variant* variant = nullptr;
  const LoadedKernel* kernel = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    variant = &variant_for(schedule.params);
    last_ = variant;
    if (schedule.grid_size > 0) {
      const LoadedKernel*& loaded = variant->loaded[device.index()];
      if (loaded == nullptr) {
        loaded = &load_kernel(
            variant->source.code, variant->source.name, device.index());
      }
      kernel = loaded;
    }
  }

  if (schedule.grid_size > 0) {
    // Values the kernel takes: CPU scalar tensors, and host scalars.
    std::optional<ReferenceEvaluator> scalars;
    auto value_of = [&](const Val* v) -> ScalarValue {
      if (v->is<TensorView>()) {
        return from_aten_scalar(std::get<at::Tensor>(argument_of(args, v)).item());
      }
      if (fusion_.is_input(v)) {
        return std::get<ScalarValue>(argument_of(args, v));
      }
      if (!scalars.has_value()) {
        scalars.emplace(fusion_);
        scalars->run_scalars(args);
      }
      return scalars->scalar_value(v);
    };

    const KernelArgLayout& layout = variant->source.layout;
    std::vector<uint64_t> storage((layout.size + 7) / 8 + 1, 0);
    char* base = reinterpret_cast<char*>(storage.data());
    for (const KernelArg& arg : layout.args) {
      char* dst = base + arg.offset;
      switch (arg.field) {
        case ArgField::kTensorPointer:
          store(dst, tensors[arg.index].data_ptr());
          break;
        case ArgField::kValue:
          write_value(dst, value_of(analysis_.value_inputs[arg.index]), arg.dtype);
          break;
        case ArgField::kNumel:
          write_index(dst, schedule.space.numel, arg.element_size);
          break;
        case ArgField::kExtents:
          for (int k = 0; k < arg.count; ++k) {
            write_index(dst + k * arg.element_size, schedule.space.extents[k],
                        arg.element_size);
          }
          break;
        case ArgField::kStrides:
          for (int k = 0; k < arg.count; ++k) {
            write_index(dst + k * arg.element_size,
                        schedule.space.strides[arg.index][k], arg.element_size);
          }
          break;
      }
    }

    cuda_driver::make_context_current(device.index());
    const c10::Stream stream =
        c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(device);
    if (dump_enabled(DumpOption::launch)) {
      std::cerr << "nvfuse launch: grid=" << schedule.grid_size
                << " block=" << variant->params.block_size
                << " numel=" << schedule.space.numel << " "
                << variant->params.to_string() << std::endl;
    }
    void* params[] = {storage.data()};
    cuda_driver::launch(
        kernel->function, {static_cast<unsigned>(schedule.grid_size)},
        {static_cast<unsigned>(variant->params.block_size)}, 0,
        stream.native_handle(), params);
  }

  std::vector<at::Tensor> values;
  for (size_t i = 0; i < fusion_.outputs().size(); ++i) {
    const int slot = output_slots_[i];
    values.push_back(
        slot >= 0 ? tensors[slot]
                  : std::get<at::Tensor>(argument_of(args, fusion_.outputs()[i])));
  }
  return values;
}

}  // namespace nvfuse
