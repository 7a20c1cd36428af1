#include "frontend/fusion_to_python.h"

#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "ir/all_exprs.h"
#include "ir/errors.h"
#include "ir/python_list.h"

namespace nvfuse {

namespace {

std::string dtype_text(DataType dtype) { return std::string("DataType.") + name_of(dtype); }

class FusionPrinter {
 public:
  FusionPrinter(
      const Fusion& fusion, const std::function<std::optional<int64_t>(const Scalar*)>& size_of)
      : fusion_(fusion), size_of_(size_of) {}

  std::string print() {
    for (const Val* input : fusion_.inputs()) {
      define_input(input);
    }
    for (const Expr* expr : fusion_.exprs()) {
      if (expr->output(0)->is<TensorView>()) {
        print_expr(*expr);
      }
    }
    for (const Val* output : fusion_.outputs()) {
      ss_ << "fd.add_output(" << name(output) << ")\n";
    }
    return ss_.str();
  }

 private:
  std::string fresh_name(const Val* v) {
    std::string n = (v->is<TensorView>() ? "T" : "S") + std::to_string(next_++);
    names_[v] = n;
    return n;
  }

  std::string name(const Val* v) const {
    auto it = names_.find(v);
    NVFUSE_ASSERT(it != names_.end(), "fd.segment: a value is used before it is printed");
    return it->second;
  }

  std::optional<int64_t> known_size(const Scalar* s) const {
    return s->is_constant() ? std::optional<int64_t>(s->value().as_int()) : size_of_(s);
  }

  // A size an op needs: its value for the call being printed. (Sizes an
  // ATen segment's result brings are known only once it ran.)
  int64_t size(const Scalar* s) const {
    const std::optional<int64_t> value = known_size(s);
    if (!value.has_value()) {
      unknown_size();
    }
    return *value;
  }

  [[noreturn]] static void unknown_size() {
    NVFUSE_UNSUPPORTED(
        "fd.segment: a size of this segment is computed from an ATen "
        "segment's result, which fd.segment does not run");
  }

  // A scalar operand: a literal, a scalar input (or a scalar computed from
  // inputs, printed on first use), or the value of a size for this call.
  std::string scalar(const Scalar* s) {
    if (s->is_constant()) {
      return s->value().to_python();
    }
    if (auto it = names_.find(s); it != names_.end()) {
      return it->second;
    }
    const Expr* def = s->definition();
    if (def != nullptr && computable_from_inputs(s)) {
      print_expr(*def);
      return name(s);
    }
    return std::to_string(size(s));
  }

  // What was found computable is remembered (it stays so: names only
  // grow): scalars are DAGs (`s * 2 + s` reads s twice), and a walk that
  // forgets doubles with every level (30 levels took 50 s).
  bool computable_from_inputs(const Val* v) {
    if (v->is<Scalar>() && v->as<Scalar>()->is_constant()) {
      return true;
    }
    if (fusion_.is_input(v) || names_.count(v) || computable_.count(v)) {
      return true;
    }
    const Expr* def = v->definition();
    if (def == nullptr || !v->is<Scalar>()) {
      return false;
    }
    for (const Val* in : def->inputs()) {
      if (!computable_from_inputs(in)) {
        return false;
      }
    }
    computable_.insert(v);
    return true;
  }

  std::string operand(const Val* v) {
    return v->is<TensorView>() ? name(v) : scalar(v->as<Scalar>());
  }

  void define_input(const Val* input) {
    const std::string n = fresh_name(input);
    if (input->is<Scalar>()) {
      ss_ << n << " = fd.define_scalar(dtype=" << dtype_text(input->dtype()) << ")\n";
      return;
    }
    // Any size and layout (symbolic, non-contiguous): a segment's input is
    // whatever its producer returned.
    const auto* tv = input->as<TensorView>();
    std::vector<int64_t> shape;
    for (const IterDomain* id : tv->logical()) {
      shape.push_back(id->is_broadcast() ? 1 : -1);
    }
    // A permuted layout is kept: without it the definition would ask for
    // the axes' strides in row-major order (a channels-last input refused).
    // Contiguity is then listed in allocation order.
    const std::vector<int64_t> stride_order = tv->stride_order();
    std::vector<std::string> contiguity;
    for (const IterDomain* id : stride_order.empty() ? tv->logical() : tv->domain().allocation()) {
      contiguity.push_back(id->is_broadcast() ? "None" : "False");
    }
    ss_ << n << " = fd.define_tensor(shape=" << python_list(shape)
        << ", contiguity=" << python_list(contiguity) << ", dtype=" << dtype_text(tv->dtype())
        << (tv->is_cpu_scalar() ? ", is_cpu=True" : "")
        << (stride_order.empty() ? "" : ", stride_order=" + python_list(stride_order)) << ")\n";
  }

  // `outs = fd.ops.call(args)`.
  void emit(const Expr& expr, const std::string& call) {
    std::string outs;
    for (const Val* out : expr.outputs()) {
      outs += (outs.empty() ? "" : ", ") + fresh_name(out);
    }
    ss_ << outs << " = " << call << "\n";
  }

  std::string tensor_list(const Expr& expr) {
    std::vector<std::string> names;
    for (const Val* in : expr.inputs()) {
      names.push_back(name(in));
    }
    return python_list(names);
  }

  void print_expr(const Expr& expr) {
    const Val* in = expr.input(0);
    switch (expr.kind()) {
      case ExprKind::PointwiseOp: {
        const OpType op = expr.as<PointwiseOp>()->op();
        if (!info_of(op).in_python) {
          NVFUSE_UNSUPPORTED("fd.segment: cannot print the internal op ", name_of(op));
        }
        std::string args;
        for (const Val* v : expr.inputs()) {
          args += (args.empty() ? "" : ", ") + operand(v);
        }
        emit(expr, std::string("fd.ops.") + name_of(op) + "(" + args + ")");
        return;
      }
      case ExprKind::CastOp:
        emit(expr,
            "fd.ops.cast(" + operand(in) + ", dtype=" + dtype_text(expr.output(0)->dtype()) + ")");
        return;
      case ExprKind::BroadcastOp:
        emit(expr,
            "fd.ops.broadcast(" + name(in) + ", " +
                python_list(expr.as<BroadcastOp>()->is_broadcast_dim()) + ")");
        return;
      case ExprKind::ExpandOp: {
        // -1 keeps an axis; the expanded ones get this call's sizes.
        std::vector<int64_t> shape;
        const auto& in_axes = in->as<TensorView>()->logical();
        const auto& out_axes = expr.output(0)->as<TensorView>()->logical();
        for (size_t a = 0; a < out_axes.size(); ++a) {
          shape.push_back(in_axes[a]->is_broadcast() && out_axes[a]->is_expanded()
                  ? size(out_axes[a]->logical_extent())
                  : -1);
        }
        emit(expr, "fd.ops.expand(" + name(in) + ", " + python_list(shape) + ")");
        return;
      }
      case ExprKind::ReductionOp: {
        const auto* r = expr.as<ReductionOp>();
        emit(expr,
            std::string("fd.ops.") + reduction_name(r->op()) + "(" + name(in) +
                ", dims=" + python_list(r->axes()) +
                ", keepdim=False, dtype=" + dtype_text(expr.output(0)->dtype()) + ")");
        return;
      }
      case ExprKind::VarMeanOp: {
        const auto* v = expr.as<VarMeanOp>();
        emit(expr,
            "fd.ops.var_mean(" + name(in) + ", dims=" + python_list(v->axes()) +
                ", correction=" + std::to_string(v->correction()) + ", keepdim=False)");
        return;
      }
      case ExprKind::ReshapeOp: {
        // One size not known before the segment runs may be printed as -1.
        std::vector<int64_t> sizes;
        int unknown = 0;
        for (size_t i = 1; i < expr.inputs().size(); ++i) {
          const std::optional<int64_t> value = known_size(expr.input(i)->as<Scalar>());
          unknown += value.has_value() ? 0 : 1;
          sizes.push_back(value.value_or(-1));
        }
        if (unknown > 1) {
          unknown_size();
        }
        emit(expr, "fd.ops.reshape(" + name(in) + ", " + python_list(sizes) + ")");
        return;
      }
      case ExprKind::PermuteOp:
        emit(expr,
            "fd.ops.permute(" + name(in) + ", " + python_list(expr.as<PermuteOp>()->dims()) + ")");
        return;
      case ExprKind::SqueezeOp:
        emit(expr,
            "fd.ops.squeeze(" + name(in) + ", " + python_list(expr.as<SqueezeOp>()->dims()) + ")");
        return;
      case ExprKind::SliceOp: {
        std::vector<int64_t> starts, ends, steps;
        for (size_t i = 1; i + 2 < expr.inputs().size(); i += 3) {
          starts.push_back(size(expr.input(i)->as<Scalar>()));
          ends.push_back(size(expr.input(i + 1)->as<Scalar>()));
          steps.push_back(size(expr.input(i + 2)->as<Scalar>()));
        }
        emit(expr,
            "fd.ops.slice(" + name(in) + ", " + python_list(starts) + ", " + python_list(ends) +
                ", " + python_list(steps) + ")");
        return;
      }
      case ExprKind::PadOp: {
        // IR: (before, after) per axis in axis order; Python: last axis first.
        std::vector<int64_t> widths;
        for (size_t i = expr.inputs().size(); i >= 4; i -= 2) {
          widths.push_back(size(expr.input(i - 2)->as<Scalar>()));
          widths.push_back(size(expr.input(i - 1)->as<Scalar>()));
        }
        emit(expr,
            "fd.ops.pad(" + name(in) + ", " + python_list(widths) + ", " + operand(expr.input(1)) +
                ")");
        return;
      }
      case ExprKind::CatOp:
        emit(expr,
            "fd.ops.cat(" + tensor_list(expr) + ", " + std::to_string(expr.as<CatOp>()->dim()) +
                ")");
        return;
      case ExprKind::MatmulOp:
        emit(expr, "fd.ops.matmul(" + name(in) + ", " + name(expr.input(1)) + ")");
        return;
      case ExprKind::LinearOp:
        emit(expr,
            "fd.ops.linear(" + name(in) + ", " + name(expr.input(1)) +
                (expr.as<LinearOp>()->has_bias() ? ", " + name(expr.input(2)) : "") + ")");
        return;
      case ExprKind::GroupedMmOp:
        emit(expr,
            "fd.ops.grouped_mm(" + name(in) + ", " + name(expr.input(1)) + ", " +
                name(expr.input(2)) + ")");
        return;
      case ExprKind::SelectOp:
        emit(expr,
            "fd.ops.select(" + name(in) + ", " + operand(expr.input(1)) + ", " +
                std::to_string(expr.as<SelectOp>()->dim()) + ")");
        return;
      case ExprKind::IndexSelectOp:
        emit(expr,
            "fd.ops.index_select(" + name(in) + ", " + name(expr.input(1)) + ", " +
                std::to_string(expr.as<IndexSelectOp>()->dim()) + ")");
        return;
      case ExprKind::GatherOp: {
        const auto* g = expr.as<GatherOp>();
        emit(expr,
            std::string("fd.ops.") + (g->take_along_axis() ? "take_along_axis" : "gather") + "(" +
                name(in) + ", " + name(expr.input(1)) + ", " + std::to_string(g->dim()) + ")");
        return;
      }
      case ExprKind::ScatterOp:
        emit(expr,
            "fd.ops.scatter(" + name(in) + ", " + name(expr.input(1)) + ", " + name(expr.input(2)) +
                ", " + std::to_string(expr.as<ScatterOp>()->dim()) + ")");
        return;
      case ExprKind::IndexPutAccumulateOp:
        emit(expr,
            "fd.ops.index_put_accumulate(" + name(in) + ", " + name(expr.input(1)) + ", " +
                name(expr.input(2)) + ")");
        return;
      case ExprKind::EmbeddingFwdOp:
        emit(expr, "fd.ops.embedding_fwd(" + name(in) + ", " + name(expr.input(1)) + ")");
        return;
      case ExprKind::TriuOp:
        emit(expr, "fd.ops.triu(" + name(in) + ", " + operand(expr.input(1)) + ")");
        return;
      case ExprKind::CumsumOp:
        emit(expr,
            "fd.ops.cumsum(" + name(in) + ", " + std::to_string(expr.as<CumsumOp>()->dim()) + ")");
        return;
      case ExprKind::FullOp: {
        std::vector<int64_t> shape;
        for (size_t i = 1; i < expr.inputs().size(); ++i) {
          shape.push_back(size(expr.input(i)->as<Scalar>()));
        }
        emit(expr,
            "fd.ops.full(" + python_list(shape) + ", " + operand(in) +
                ", dtype=" + dtype_text(expr.output(0)->dtype()) + ")");
        return;
      }
      case ExprKind::IotaOp:
        emit(expr,
            "fd.ops.iota(" + std::to_string(size(in->as<Scalar>())) + ", " +
                operand(expr.input(1)) + ", " + operand(expr.input(2)) +
                ", dtype=" + dtype_text(expr.output(0)->dtype()) + ")");
        return;
      case ExprKind::RngOp: {
        // A seed drawn from torch's generator prints as none given: the
        // segment run alone draws its own, as the fusion does each run.
        const auto& rng = *expr.as<RngOp>();
        std::vector<int64_t> shape;
        for (size_t i = rng.first_size_input(); i < expr.inputs().size(); ++i) {
          shape.push_back(size(expr.input(i)->as<Scalar>()));
        }
        std::string seed;
        if (rng.has_explicit_seed()) {
          seed = ", rng_seed=" + operand(expr.input(2)) + ", rng_offset=" + operand(expr.input(3));
        }
        emit(expr,
            std::string("fd.ops.") + (rng.is_normal() ? "normal(" : "uniform(") + operand(in) +
                ", " + operand(expr.input(1)) + ", shape=" + python_list(shape) + seed +
                ", dtype=" + dtype_text(expr.output(0)->dtype()) + ")");
        return;
      }
      case ExprKind::SdpaFwdOp:
        emit(expr,
            "fd.ops.sdpfa_fwd(" + name(in) + ", " + name(expr.input(1)) + ", " +
                name(expr.input(2)) + ", dropout_p=" + operand(expr.input(3)) +
                ", is_causal=" + operand(expr.input(4)) +
                (expr.as<SdpaFwdOp>()->has_scale() ? ", scale=" + operand(expr.input(5)) : "") +
                ")");
        return;
      case ExprKind::TopkOp: {
        const auto& t = *expr.as<TopkOp>();
        emit(expr,
            "fd.ops.topk(" + name(in) + ", " + operand(expr.input(1)) + ", " +
                std::to_string(t.dim()) + ", largest=" + python_bool(t.largest()) +
                ", sorted=" + python_bool(t.sorted()) + ")");
        return;
      }
      case ExprKind::ArgsortOp: {
        const auto& a = *expr.as<ArgsortOp>();
        emit(expr,
            "fd.ops.argsort(" + name(in) + ", " + std::to_string(a.dim()) + ", descending=" +
                python_bool(a.descending()) + ", stable=" + python_bool(a.stable()) + ")");
        return;
      }
      case ExprKind::SdpaBwdOp: {
        std::string args;
        for (size_t i = 0; i < 6; ++i) {
          args += name(expr.input(i)) + ", ";
        }
        emit(expr,
            "fd.ops.sdpfa_bwd(" + args + "dropout_p=" + operand(expr.input(6)) +
                ", is_causal=" + operand(expr.input(7)) + ", philox_seed=" + name(expr.input(8)) +
                ", philox_offset=" + name(expr.input(9)) +
                (expr.as<SdpaBwdOp>()->has_scale() ? ", scale=" + operand(expr.input(10)) : "") +
                ")");
        return;
      }
      default:
        NVFUSE_UNSUPPORTED("fd.segment: cannot print a ", expr.op_name(),
            " segment as a definition yet (", name_of(expr.kind()), ")");
    }
  }

  const Fusion& fusion_;
  const std::function<std::optional<int64_t>(const Scalar*)>& size_of_;
  std::unordered_map<const Val*, std::string> names_;
  std::unordered_set<const Val*> computable_;  // found by computable_from_inputs
  int next_ = 0;
  std::ostringstream ss_;
};

}  // namespace

std::string fusion_to_python(
    const Fusion& fusion, const std::function<std::optional<int64_t>(const Scalar*)>& size_of) {
  return FusionPrinter(fusion, size_of).print();
}

}  // namespace nvfuse
