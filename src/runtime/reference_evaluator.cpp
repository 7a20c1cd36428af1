#include "runtime/reference_evaluator.h"

#include <ATen/ATen.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include "ir/dispatch.h"
#include "ir/expression_evaluator.h"
#include "ir/printer.h"
#include "ir/type_promotion.h"
#include "runtime/aten_pointwise.h"

namespace nvfuse {

namespace {

// Half, BFloat16 and Float8 compute in Float.
at::ScalarType math_type_of(DataType compute) {
  return is_reduced_float(compute) ? at::kFloat : to_aten(compute);
}

// The 64-bit type torch holds a wrapped number of `type`'s kind in.
at::ScalarType wrapped_type_of(at::ScalarType type) {
  if (at::isComplexType(type)) {
    return at::kComplexDouble;
  }
  if (at::isFloatingType(type)) {
    return at::kDouble;
  }
  return type == at::kBool ? at::kBool : at::kLong;
}

// A Python scalar as torch holds it: a 0-d CPU tensor flagged as a wrapped
// number, so it does not take part in type promotion as a tensor would.
// Its value is rounded to `type` first, converted as a tensor cast converts
// (1e308 becomes inf in Float, as torch.ones(3) * 1e308 gives; building the
// Float tensor from the value directly would raise on the overflow), then
// held in the 64-bit type torch's wrapped numbers always have (exactly):
// code that reads wrapped numbers, such as a Python dispatcher, knows
// only those. It lives on `device`, the device of the op's tensors: ATen's
// binary ops take a CPU scalar beside CUDA tensors, but clamp's and
// lerp's Tensor overloads (and ternary ops in general) refuse one. It is
// filled there by a kernel: copying the CPU tensor over would be a
// host-to-device copy, which waits for the stream's work to finish.
at::Tensor wrapped_number(const ScalarValue& value, at::ScalarType type, at::Device device) {
  const at::Tensor on_host = at::scalar_tensor(
      to_aten_scalar(value), at::TensorOptions().dtype(to_aten(value.natural_dtype())))
                                 .to(type)
                                 .to(wrapped_type_of(type));
  at::Tensor t =
      device.is_cpu() ? on_host : at::full({}, on_host.item(), on_host.options().device(device));
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

at::Tensor to_type(const at::Tensor& t, DataType dtype) {
  const at::ScalarType type = to_aten(dtype);
  return t.scalar_type() == type ? t : t.to(type);
}

// A pointwise result that is an expanded broadcast (stride 0) along some
// axes is constant along them. ATen's broadcasting would materialize it at
// full size, in Float for reduced types, before it is cast and laid out
// as the expanded output it is: a mask where(causal, bias, min) over
// [batch, heads, q, k] made two Float copies of the whole batch where a
// kernel writes one slice. So the op is computed on one slice of those
// axes and expanded back, as a kernel leaves it.
struct ComputedOnce {
  std::vector<int64_t> axes;  // narrowed to one slice
  std::vector<int64_t> full_sizes;

  at::Tensor narrowed(at::Tensor t) const {
    for (int64_t axis : axes) {
      if (t.dim() > 0 && t.size(axis) != 1) {
        t = t.narrow(axis, 0, 1);
      }
    }
    return t;
  }
  at::Tensor expanded(const at::Tensor& r) const { return axes.empty() ? r : r.expand(full_sizes); }
};

// The axes along which `out` is expanded and every tensor operand is
// constant: of size 1 or stride 0 there, or 0-d (a pointwise op's other
// tensor operands have the output's rank).
ComputedOnce computed_once(const Val* out, const std::vector<at::Tensor>& operands) {
  ComputedOnce once;
  const auto& logical = out->as<TensorView>()->logical();
  for (int64_t axis = 0; axis < static_cast<int64_t>(logical.size()); ++axis) {
    int64_t full = 1;  // broadcast: the size of any operand not of size 1 (0 too)
    bool constant = logical[axis]->is_expanded();
    for (const at::Tensor& t : operands) {
      if (t.dim() == 0) {
        continue;
      }
      constant = constant && (t.size(axis) == 1 || t.stride(axis) == 0);
      full = t.size(axis) == 1 ? full : t.size(axis);
    }
    once.full_sizes.push_back(full);
    if (constant && full > 1) {
      once.axes.push_back(axis);
    }
  }
  return once;
}

}  // namespace

// Where the op's tensor operands live (the CPU when it has none).
at::Device ReferenceEvaluator::device_of_tensor_operands(const Expr& e) const {
  for (const Val* in : e.inputs()) {
    if (in->is<TensorView>()) {
      return tensor_of(in).device();
    }
  }
  return at::kCPU;
}

at::Tensor ReferenceEvaluator::tensor_of(const Val* v) const {
  auto it = tensors_.find(v);
  NVFUSE_ASSERT(it != tensors_.end(), "no value computed for ", print_operand(*v));
  return it->second;
}

ScalarValue ReferenceEvaluator::scalar_of(const Val* v) const {
  const auto* s = v->as<Scalar>();
  if (s->is_constant()) {
    return s->value();
  }
  auto it = scalars_.find(v);
  NVFUSE_ASSERT(it != scalars_.end(), "no value computed for ", s->to_string());
  return it->second;
}

void ReferenceEvaluator::bind(const std::vector<Argument>& args) {
  tensors_.clear();
  scalars_.clear();

  const auto& inputs = fusion_.inputs();
  NVFUSE_ASSERT_EQ(args.size(), inputs.size(), "unvalidated arguments");
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i]->is<TensorView>()) {
      const at::Tensor& t = std::get<at::Tensor>(args[i]);
      tensors_[inputs[i]] = t;

      // Extents, for host scalars computed from them (mean's count).
      const auto& axes = inputs[i]->as<TensorView>()->logical();
      for (size_t axis = 0; axis < axes.size() && axis < t.sizes().size(); ++axis) {
        const Scalar* extent = axes[axis]->logical_extent();
        if (!extent->is_constant() && extent->definition() == nullptr) {
          scalars_.emplace(extent, ScalarValue(static_cast<int64_t>(t.size(axis))));
        }
      }
    } else {
      scalars_[inputs[i]] = std::get<ScalarValue>(args[i]).cast_to(inputs[i]->dtype());
    }
  }
}

void ReferenceEvaluator::run_scalars(const std::vector<Argument>& args) {
  bind(args);
  for (const Expr* expr : fusion_.exprs()) {
    if (expr->output(0)->is<Scalar>()) {
      evaluate(*expr);
    }
  }
}

std::vector<at::Tensor> ReferenceEvaluator::run(const std::vector<Argument>& args) {
  bind(args);
  for (const Expr* expr : fusion_.exprs()) {
    evaluate(*expr);
  }
  std::vector<at::Tensor> outputs;
  for (const Val* out : fusion_.outputs()) {
    outputs.push_back(tensor_of(out));
  }
  return outputs;
}

void ReferenceEvaluator::evaluate(const Expr& expr) {
  // The ATen calls made here implement nvfuse's ops, as its kernels do on
  // the GPU: a Python dispatch mode active around execute (AOTAutograd runs
  // a compiled graph's first call under one) must not see them, and cannot
  // re-dispatch them (it turns the wrapped-number operands into Python
  // numbers, which the Tensor overloads called here do not take).
  c10::impl::ExcludeDispatchKeyGuard no_python_modes(
      c10::DispatchKeySet({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot}));
  try {
    dispatch(&expr, [this](const auto* e) { handle(*e); });
  } catch (const c10::Error& e) {
    NVFUSE_INPUT_CHECK(false, "evaluating `", print_expr(expr),
        "` failed on these inputs: ", e.what_without_backtrace());
  }
}

void ReferenceEvaluator::handle(const PointwiseOp& e) {
  if (e.output(0)->is<Scalar>()) {
    handle_scalar_pointwise(e);
    return;
  }
  const int first_promoted = first_promoted_operand(e.op());
  const at::ScalarType math = math_type_of(compute_type_of(e));
  const at::Device device = device_of_tensor_operands(e);
  std::vector<at::Tensor> tensor_operands;  // in operand order
  for (const Val* in : e.inputs()) {
    if (in->is<TensorView>()) {
      tensor_operands.push_back(tensor_of(in));
    }
  }
  const ComputedOnce once = computed_once(e.output(0), tensor_operands);
  auto next_tensor = tensor_operands.begin();
  std::vector<AtenOperand> operands;
  for (size_t i = 0; i < e.inputs().size(); ++i) {
    const Val* in = e.input(i);
    const bool promoted = static_cast<int>(i) >= first_promoted;
    if (in->is<TensorView>()) {
      at::Tensor t = once.narrowed(*next_tensor++);
      operands.push_back({promoted ? t.to(math) : t, std::nullopt});
    } else {
      // A scalar condition of `where` stays Bool.
      const ScalarValue v = scalar_of(in);
      operands.push_back({wrapped_number(v, promoted ? math : at::kBool, device), v});
    }
  }
  tensors_[e.output(0)] =
      once.expanded(to_type(apply_pointwise(e.op(), operands, math), e.output(0)->dtype()));
}

void ReferenceEvaluator::handle_scalar_pointwise(const PointwiseOp& e) {
  Val* out = e.output(0);
  std::vector<ScalarValue> values;
  for (const Val* in : e.inputs()) {
    values.push_back(scalar_of(in));
  }
  if (auto folded = evaluate_scalar_op(e.op(), values, out->dtype())) {
    scalars_[out] = *folded;
    return;
  }
  // Ops without a host implementation: ATen on 0-d tensors.
  const DataType compute = compute_type_of(e);
  std::vector<AtenOperand> operands;
  for (const ScalarValue& v : values) {
    operands.push_back({at::scalar_tensor(to_aten_scalar(v.cast_to(compute)),
                            at::TensorOptions().dtype(to_aten(compute))),
        v});
  }
  at::Tensor r = apply_pointwise(e.op(), operands, to_aten(compute));
  scalars_[out] = from_aten_scalar(r.item()).cast_to(out->dtype());
}

void ReferenceEvaluator::handle(const CastOp& e) {
  Val* out = e.output(0);
  if (out->is<Scalar>()) {
    scalars_[out] = scalar_of(e.input(0)).cast_to(out->dtype());
  } else {
    const at::Tensor in = tensor_of(e.input(0));
    const ComputedOnce once = computed_once(out, {in});
    tensors_[out] = once.expanded(to_type(once.narrowed(in), out->dtype()));
  }
}

void ReferenceEvaluator::handle(const BroadcastOp& e) {
  at::Tensor t = tensor_of(e.input(0));
  const auto& is_new = e.is_broadcast_dim();
  for (size_t i = 0; i < is_new.size(); ++i) {
    if (is_new[i]) {
      t = t.unsqueeze(static_cast<int64_t>(i));
    }
  }
  tensors_[e.output(0)] = t;
}

void ReferenceEvaluator::handle(const ExpandOp& e) {
  at::Tensor t = tensor_of(e.input(0));
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < t.dim(); ++i) {
    const int64_t size = scalar_of(e.input(i + 1)).as_int();
    sizes.push_back(size == -1 ? t.size(i) : size);  // -1 keeps the axis
  }
  tensors_[e.output(0)] = t.expand(sizes);
}

void ReferenceEvaluator::handle(const ReductionOp& e) {
  at::Tensor t = tensor_of(e.input(0));
  t = t.to(math_type_of(from_aten(t.scalar_type())));
  const std::vector<int64_t>& axes = e.axes();
  at::Tensor r;
  if (axes.empty()) {
    r = t.clone();
  } else if (e.op() == OpType::add) {
    r = at::sum(t, axes);
  } else if (e.op() == OpType::mul) {
    r = t;  // at::prod reduces one axis at a time
    for (auto axis = axes.rbegin(); axis != axes.rend(); ++axis) {
      r = at::prod(r, *axis);
    }
  } else if (e.op() == OpType::maximum) {
    r = at::amax(t, axes);
  } else {
    // A new reduction op must say which ATen reduction evaluates it.
    NVFUSE_ASSERT(e.op() == OpType::minimum, "no ATen reduction for ", name_of(e.op()));
    r = at::amin(t, axes);
  }
  tensors_[e.output(0)] = to_type(r, e.output(0)->dtype());
}

void ReferenceEvaluator::handle(const VarMeanOp& e) {
  at::Tensor t = tensor_of(e.input(0));
  t = t.to(math_type_of(from_aten(t.scalar_type())));
  // The mean is torch.mean's (an infinity among the values is the mean),
  // as the generated kernels compute it; torch's Welford var_mean turns it
  // NaN once an infinity meets a later finite value (docs/api.md).
  at::Tensor var = std::get<0>(at::var_mean(t, e.axes(), at::Scalar(e.correction()), false));
  tensors_[e.output(0)] = to_type(var, e.output(0)->dtype());
  tensors_[e.output(1)] = to_type(at::mean(t, e.axes()), e.output(1)->dtype());
}

void ReferenceEvaluator::handle(const Split& e) {
  NVFUSE_ASSERT(false, "a domain transform reached the evaluator");
}

void ReferenceEvaluator::handle(const Merge& e) {
  NVFUSE_ASSERT(false, "a domain transform reached the evaluator");
}

}  // namespace nvfuse
