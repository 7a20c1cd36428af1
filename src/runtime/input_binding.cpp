#include "runtime/input_binding.h"

#include <numeric>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "ir/exprs.h"
#include "ir/printer.h"
#include "ir/python_list.h"
#include "ir/shape_exprs.h"

namespace nvfuse {

namespace {

std::string shape_of_definition(const TensorView& tv) {
  std::ostringstream ss;
  ss << "[";
  for (int64_t i = 0; i < tv.rank(); ++i) {
    const IterDomain* id = tv.logical()[i];
    ss << (i ? ", " : "");
    if (id->is_broadcast() && !id->is_expanded()) {
      ss << 1;
    } else if (auto size = id->logical_extent()->constant_int()) {
      ss << *size;
    } else {
      ss << -1;
    }
  }
  ss << "]";
  return ss.str();
}

// "an Int", "a Float".
std::string with_article(const std::string& name) {
  const bool vowel = !name.empty() && std::string("AEIOU").find(name[0]) != std::string::npos;
  return (vowel ? "an " : "a ") + name;
}

std::string describe_argument(const Argument& arg) {
  if (const auto* t = std::get_if<at::Tensor>(&arg)) {
    return std::string("a ") + c10::toString(t->scalar_type()) + " tensor of shape " +
        python_list(t->sizes()) + " and strides " + python_list(t->strides()) + " on " +
        t->device().str();
  }
  const ScalarValue& v = std::get<ScalarValue>(arg);
  return "the Python scalar " + v.to_python();
}

// Which input axis each symbolic extent came from, for error messages
// (kept as numbers: the text is built only for a message, not on every
// call).
struct ExtentOrigin {
  size_t input = 0;
  int64_t axis = 0;
};
using ExtentOrigins = std::unordered_map<const Scalar*, ExtentOrigin>;

std::string text_of(const ExtentOrigin& origin) {
  return "input " + std::to_string(origin.input) + " axis " + std::to_string(origin.axis);
}

class InputBinder {
 public:
  InputBinder(const Fusion& fusion, const std::vector<Argument>& args, c10::Device device)
      : fusion_(fusion), args_(args) {
    bound_.device = device;
  }

  BoundInputs bind();

 private:
  void bind_tensor(size_t index, const TensorView& tv, const at::Tensor& t);
  void bind_sizes(size_t index, const TensorView& tv, const at::Tensor& t);
  void check_strides(size_t index, const TensorView& tv, const at::Tensor& t);
  void bind_scalar(size_t index, const Scalar& s, const ScalarValue& v);
  void bind_extent(const Scalar* extent, int64_t size, ExtentOrigin origin);
  void check_extent_equalities();
  void check_reshape_sizes(const ExtentEquality& eq, const Expr& reshape);
  std::string input_name(size_t index) const { return "input " + std::to_string(index); }

  const Fusion& fusion_;
  const std::vector<Argument>& args_;
  BoundInputs bound_;
  ExtentOrigins origins_;
  std::optional<size_t> device_source_;
};

BoundInputs InputBinder::bind() {
  const auto& inputs = fusion_.inputs();
  check_argument_count(fusion_, args_);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Val* input = inputs[i];
    if (input->is<TensorView>()) {
      const auto* t = std::get_if<at::Tensor>(&args_[i]);
      NVFUSE_INPUT_TYPE_CHECK(t != nullptr, input_name(i), ": expected ", describe_input(*input),
          ", got ", describe_argument(args_[i]));
      bind_tensor(i, *input->as<TensorView>(), *t);
    } else {
      const auto* v = std::get_if<ScalarValue>(&args_[i]);
      NVFUSE_INPUT_TYPE_CHECK(v != nullptr, input_name(i), ": expected ", describe_input(*input),
          ", got ", describe_argument(args_[i]));
      bind_scalar(i, *input->as<Scalar>(), *v);
    }
  }
  check_extent_equalities();
  return std::move(bound_);
}

void InputBinder::bind_tensor(size_t index, const TensorView& tv, const at::Tensor& t) {
  NVFUSE_INPUT_CHECK(t.defined(), input_name(index), ": got an undefined tensor");
  DataType dtype = DataType::Null;
  try {
    dtype = from_aten(t.scalar_type());
  } catch (const Error& e) {  // a torch dtype nvfuse lacks: say which input
    NVFUSE_INPUT_TYPE_CHECK(
        false, input_name(index), ": ", e.what(), "; expected ", describe_input(tv));
  }
  NVFUSE_INPUT_TYPE_CHECK(dtype == tv.dtype(), input_name(index), ": expected ", describe_input(tv),
      ", got ", describe_argument(t));
  NVFUSE_INPUT_CHECK(t.dim() == tv.rank(), input_name(index), ": expected ", describe_input(tv),
      " (rank ", tv.rank(), "), got ", describe_argument(t), " (rank ", t.dim(), ")");
  if (tv.is_cpu_scalar()) {
    NVFUSE_INPUT_CHECK(t.is_cpu(), input_name(index),
        " was defined with is_cpu=True and must be a 0-d CPU tensor, got ", describe_argument(t));
  } else if (!device_source_.has_value()) {
    device_source_ = index;
    bound_.device = t.device();
  } else {
    NVFUSE_INPUT_CHECK(t.device() == bound_.device, input_name(index), " is on ", t.device().str(),
        " but input ", *device_source_, " is on ", bound_.device.str(),
        "; all tensor inputs must be on one device (a 0-d CPU tensor can be "
        "mixed in when defined with is_cpu=True)");
  }
  bind_sizes(index, tv, t);
  if (!tv.any_strides()) {
    check_strides(index, tv, t);
  }
}

void InputBinder::bind_sizes(size_t index, const TensorView& tv, const at::Tensor& t) {
  for (int64_t axis = 0; axis < tv.rank(); ++axis) {
    const IterDomain* id = tv.logical()[axis];
    const int64_t size = t.size(axis);
    const ExtentOrigin where{index, axis};
    if (id->is_broadcast() && !id->is_expanded()) {
      NVFUSE_INPUT_CHECK(size == 1, text_of(where), " has size ", size,
          ", but the definition makes it a broadcast axis (shape entry 1): "
          "expected ",
          describe_input(tv), ", got ", describe_argument(t));
      continue;
    }
    if (id->is_expanded()) {
      NVFUSE_INPUT_CHECK(size == 1 || t.stride(axis) == 0, text_of(where), " has stride ",
          t.stride(axis),
          ", but the definition makes it an expanded broadcast (contiguity "
          "None): its stride must be 0");
    }
    bind_extent(id->logical_extent(), size, where);
  }
}

// Walks the allocation domain from the innermost axis: a contiguous axis
// must have exactly the stride that packs the axes inside it; any axis must
// not have a smaller stride than an axis the definition places inside it.
void InputBinder::check_strides(size_t index, const TensorView& tv, const at::Tensor& t) {
  if (t.numel() == 0) {
    // No element to lay out: torch gives empty tensors arbitrary strides
    // (randn(5, 0, 1) * 3 has (0, 1, 0)) and still calls them contiguous.
    return;
  }
  const TensorDomain& domain = tv.domain();
  auto permutation = domain.allocation_permutation();
  NVFUSE_ASSERT(permutation.has_value(), "input allocation is not a permutation");
  int64_t packed_stride = 1;
  std::optional<int64_t> inner_axis;
  for (int64_t position = tv.rank() - 1; position >= 0; --position) {
    const int64_t axis = (*permutation)[position];
    if (domain.allocation()[position]->is_broadcast() || t.size(axis) <= 1) {
      continue;  // a size-1 axis has no meaningful stride
    }
    const int64_t stride = t.stride(axis);
    const bool contiguous = domain.contiguity()[position].value_or(false);
    NVFUSE_INPUT_CHECK(!contiguous || stride == packed_stride, input_name(index), " axis ", axis,
        " has stride ", stride, ", but the definition says it is ",
        "contiguous in allocation order, which needs stride ", packed_stride, ". Expected ",
        describe_input(tv), ", got ", describe_argument(t),
        ". Pass a tensor with that layout (e.g. .contiguous()) or define the "
        "input with the tensor's layout (fd.from_pytorch / define_tensor("
        "sizes=, strides=))");
    NVFUSE_INPUT_CHECK(!inner_axis.has_value() || stride >= t.stride(*inner_axis),
        input_name(index), " axis ", axis, " has stride ", stride, ", smaller than the stride ",
        t.stride(*inner_axis), " of axis ", *inner_axis,
        ", which the definition's stride order places inside it. Expected ", describe_input(tv),
        ", got ", describe_argument(t));
    packed_stride = stride * t.size(axis);
    inner_axis = axis;
  }
}

void InputBinder::bind_scalar(size_t index, const Scalar& s, const ScalarValue& v) {
  const DataType dtype = s.dtype();
  bool ok = false;
  switch (category_of(dtype)) {
    case TypeCategory::kBool:
      ok = v.is_bool();
      break;
    case TypeCategory::kInt:
      ok = v.is_int();
      break;
    case TypeCategory::kFloat:
      ok = v.is_double() || v.is_int();
      break;
    case TypeCategory::kComplex:
      ok = !v.is_bool();
      break;
    case TypeCategory::kNone:
      break;
  }
  NVFUSE_INPUT_TYPE_CHECK(
      ok, input_name(index), ": expected ", describe_input(s), ", got ", describe_argument(v));
  bound_.extents.bind(&s, v);
}

void InputBinder::bind_extent(const Scalar* extent, int64_t size, ExtentOrigin origin) {
  if (auto constant = extent->constant_int()) {
    NVFUSE_INPUT_CHECK(*constant == size, text_of(origin), " has size ", size,
        " but the definition fixes it to ", *constant);
    return;
  }
  bound_.extents.bind(extent, ScalarValue(size));
  origins_.emplace(extent, origin);
}

// A reshape's element count (eq.a) against the product of its new sizes
// (eq.b), checked as torch checks a shape: in the user's terms, with the -1
// they wrote, before an inferred size divides by zero.
void InputBinder::check_reshape_sizes(const ExtentEquality& eq, const Expr& reshape) {
  auto count = bound_.extents.evaluate(eq.a);
  if (!count.has_value()) {
    return;
  }
  std::vector<std::string> shape;
  int64_t known = 1;
  bool valid = true;
  bool has_inferred = false;
  for (size_t i = 1; i < reshape.inputs().size(); ++i) {
    const Expr* def = reshape.input(i)->definition();
    // ops/shape.cpp writes an inferred size as div(element count, known).
    if (def != nullptr && def->is<PointwiseOp>() && def->as<PointwiseOp>()->op() == OpType::div &&
        def->input(0) == eq.a) {
      has_inferred = true;
      shape.push_back("-1");
      continue;
    }
    auto size = bound_.extents.evaluate(reshape.input(i)->as<Scalar>());
    if (!size.has_value()) {
      return;
    }
    shape.push_back(std::to_string(size->as_int()));
    valid = valid && size->as_int() >= 0;
    known *= size->as_int();
  }
  const int64_t elements = count->as_int();
  valid = valid && (has_inferred ? known != 0 && elements % known == 0 : known == elements);
  std::string listed;
  for (size_t i = 0; i < shape.size(); ++i) {
    listed += (i ? ", " : "") + shape[i];
  }
  NVFUSE_INPUT_CHECK(valid, "reshape: the shape [", listed, "] is invalid for an input of ",
      elements, " elements (`", print_expr(reshape), "`)");
}

void InputBinder::check_extent_equalities() {
  for (const ExtentEquality& eq : fusion_.extent_equalities()) {
    const Expr* op = eq.result->definition();
    if (op != nullptr && op->is<ReshapeOp>()) {
      check_reshape_sizes(eq, *op);
    }
    auto a = bound_.extents.evaluate(eq.a);
    auto b = bound_.extents.evaluate(eq.b);
    if (!a.has_value() || !b.has_value() || *a == *b) {
      continue;
    }
    auto name = [this](const Scalar* extent) {
      auto it = origins_.find(extent);
      return it != origins_.end() ? text_of(it->second) : "the size " + extent->to_string();
    };
    NVFUSE_INPUT_CHECK(false, name(eq.a), " (size ", *a, ") and ", name(eq.b), " (size ", *b,
        ") must be equal, because `", op != nullptr ? print_expr(*op) : std::string("an op"),
        "` combines them; make them equal, or define one as a broadcast "
        "(size-1) axis");
  }
}

}  // namespace

void check_argument_count(const Fusion& fusion, const std::vector<Argument>& args) {
  const auto& inputs = fusion.inputs();
  if (args.size() == inputs.size()) {
    return;
  }
  std::ostringstream expected;
  for (size_t i = 0; i < inputs.size(); ++i) {
    expected << "\n  input " << i << ": " << describe_input(*inputs[i]);
  }
  NVFUSE_INPUT_CHECK(false, "execute: the definition takes ", inputs.size(), " inputs, but ",
      args.size(), " were given. Expected:", expected.str());
}

std::string describe_input(const Val& input) {
  if (input.is<Scalar>()) {
    return with_article(name_of(input.dtype())) + " scalar";
  }
  const auto& tv = *input.as<TensorView>();
  std::ostringstream ss;
  ss << with_article(name_of(tv.dtype()))
     << " tensor defined with shape=" << shape_of_definition(tv) << ", contiguity=[";
  const auto& contiguity = tv.domain().contiguity();
  for (size_t i = 0; i < contiguity.size(); ++i) {
    ss << (i ? ", " : "")
       << (!contiguity[i].has_value() ? "None"
                  : *contiguity[i]    ? "True"
                                      : "False");
  }
  ss << "]";
  std::vector<int64_t> stride_order = tv.stride_order();
  if (!stride_order.empty()) {
    ss << ", stride_order=" << python_list(stride_order);
  }
  if (tv.is_cpu_scalar()) {
    ss << ", is_cpu=True";
  }
  return ss.str();
}

BoundInputs bind_inputs(
    const Fusion& fusion, const std::vector<Argument>& args, c10::Device device) {
  return InputBinder(fusion, args, device).bind();
}

c10::Device device_of_arguments(
    const Fusion& fusion, const std::vector<Argument>& args, c10::Device fallback) {
  const auto& inputs = fusion.inputs();
  for (size_t i = 0; i < inputs.size() && i < args.size(); ++i) {
    const auto* t = std::get_if<at::Tensor>(&args[i]);
    if (t != nullptr && inputs[i]->is<TensorView>() &&
        !inputs[i]->as<TensorView>()->is_cpu_scalar()) {
      return t->device();
    }
  }
  return fallback;
}

}  // namespace nvfuse
