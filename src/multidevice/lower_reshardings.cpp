#include "multidevice/lower_reshardings.h"

#include "ir/all_exprs.h"
#include "ir/axis_flow.h"
#include "ir/errors.h"
#include "ir/printer.h"
#include "ir/sharding.h"

namespace nvfuse {

namespace {

class Lowerer {
 public:
  explicit Lowerer(const Expr& expr) : expr_(expr), out_(*expr.output(0)->as<TensorView>()) {}

  void lower(std::vector<Communication>& result) {
    if (!out_.device_mesh().has_value()) {
      return;
    }
    const Sharding out = sharding_of(out_);
    bool same_mesh = true;
    // Per tensor input on the output's mesh: its distribution once the
    // input-side communications and local slices are done.
    std::vector<Read> read_as;
    for (size_t i = 0; i < expr_.inputs().size(); ++i) {
      const Val* v = expr_.input(i);
      if (!v->is<TensorView>() || !v->as<TensorView>()->device_mesh().has_value()) {
        continue;
      }
      const auto& in_tv = *v->as<TensorView>();
      const Sharding in = sharding_of(in_tv);
      if (*in.mesh != *out.mesh) {
        same_mesh = false;
        if (!lower_reduce_to_root(i, in, out, result)) {
          lower_mesh_change(in_tv, in, out, result);
        }
        continue;
      }
      const auto flow = axis_flow(expr_, i);
      NVFUSE_CHECK_AS(ErrorKind::kUnsupported, flow.has_value() || !in.is_sharded(), "sharded ",
          in_tv.name(), " flows through ", print_expr(expr_),
          ", which sharding does not follow yet");
      if (flow.has_value()) {
        read_as.push_back({i, &in_tv, *flow, lower_input(in_tv, in, *flow, out, result)});
      }
    }
    if (same_mesh) {
      check_output_sources(out, read_as);
      check_other_outputs(read_as);
    }
    if (partial_mesh_axis_ >= 0) {
      NVFUSE_CHECK_AS(ErrorKind::kUnsupported, !(expr_.is<LinearOp>() && expr_.inputs().size() > 2),
          print_expr(expr_),
          " contracts a sharded axis and adds a bias, which every "
          "device would add to its partial result; apply the bias after the linear");
      Communication comm = base(out_, *out.mesh, partial_mesh_axis_);
      comm.reduce_op = partial_combine_;
      const int scattered = out.logical_axis_on(partial_mesh_axis_);
      comm.type = scattered >= 0 ? CommunicationType::ReduceScatter : CommunicationType::Allreduce;
      comm.axis = scattered;
      result.push_back(comm);
    }
  }

 private:
  // How the expr reads one tensor input.
  struct Read {
    size_t input;
    const TensorView* tensor;
    AxisFlow flow;  // into output 0
    Sharding sharding;
  };

  // The communications that let `expr_` read `in_tv` (distributed as `in`)
  // for an output distributed as `out`; returns how the expr reads it.
  Sharding lower_input(const TensorView& in_tv, const Sharding& in, const AxisFlow& flow,
      const Sharding& out, std::vector<Communication>& result) {
    Sharding read = in;
    for (size_t a = 0; a < in.mesh_axis.size(); ++a) {
      const int m = in.mesh_axis[a];
      if (m < 0) {
        continue;
      }
      const int64_t devices = in.mesh->size(m);
      if (flow.summed[a]) {
        NVFUSE_CHECK_AS(ErrorKind::kUnsupported, tensor_outputs() == 1, print_expr(expr_),
            " reduces sharded axis ", a, " of ", in_tv.name(),
            " into several outputs; split_sharded_variances rewrites real "
            "variances into sums, a complex one is not built yet");
        partial_mesh_axis_ = m;
        partial_combine_ = flow.combine;
        continue;
      }
      const int64_t c = flow.to_output[a];
      const bool keeps = keeps_sharding(flow, static_cast<int64_t>(a), in_tv, out_, devices);
      if ((keeps && out.mesh_axis[c] == m) || (c < 0 && !flow.whole[a])) {
        continue;
      }
      Communication comm = base(in_tv, *in.mesh, m);
      comm.axis = static_cast<int64_t>(a);
      comm.type = CommunicationType::Allgather;
      read.mesh_axis[a] = -1;
      // Output sharded on m along an axis another input axis feeds: move
      // the shards there in one exchange.
      const int64_t target = source_axis(flow, in_tv, out_, out.logical_axis_on(m), devices);
      if (target >= 0 && in.mesh_axis[target] < 0) {
        comm.type = CommunicationType::AllToAll;
        comm.to_axis = target;
        read.mesh_axis[target] = m;
      }
      result.push_back(comm);
    }
    return with_local_slices(flow, in_tv, std::move(read), out_, out);
  }

  size_t tensor_outputs() const {
    size_t count = 0;
    for (const Val* v : expr_.outputs()) {
      count += v->is<TensorView>();
    }
    return count;
  }

  // Each sharded output axis must come from an input axis that can be read
  // sharded; one computed from whole axes (a slice's cut, a reshape's inner
  // axis) would need the whole result first.
  void check_output_sources(const Sharding& out, const std::vector<Read>& read_as) const {
    for (size_t c = 0; c < out.mesh_axis.size(); ++c) {
      const int m = out.mesh_axis[c];
      // The ReduceScatter of a partial result shards its own axis.
      if (m < 0 || m == partial_mesh_axis_ || out_.logical()[c]->is_broadcast()) {
        continue;
      }
      bool fed = false;
      bool ranked = false;  // 0-d inputs feed no axis
      for (const Read& read : read_as) {
        const TensorView& in_tv = *read.tensor;
        const int64_t b =
            source_axis(read.flow, in_tv, out_, static_cast<int64_t>(c), out.mesh->size(m));
        // A broadcast axis is the same on every device: expanding it
        // locally gives the local part.
        fed = fed ||
            (b >= 0 && (read.sharding.mesh_axis[b] == m || in_tv.logical()[b]->is_broadcast()));
        ranked = ranked || in_tv.rank() > 0;
      }
      NVFUSE_CHECK_AS(ErrorKind::kUnsupported, fed || !ranked, print_expr(expr_), " gives ",
          out_.name(), " axis ", c, " sharded on ", did_of_mesh_axis(m),
          ", but computes that axis "
          "from input axes it needs whole; shard a tensor after it instead");
    }
  }

  // Outputs past the first follow the same reads (attention's logsumexp,
  // var_mean's mean): their sharding must be what those reads give.
  void check_other_outputs(const std::vector<Read>& read_as) const {
    if (read_as.empty()) {
      return;
    }
    for (size_t o = 1; o < expr_.outputs().size(); ++o) {
      const Val* v = expr_.output(o);
      if (!v->is<TensorView>() || !v->as<TensorView>()->device_mesh().has_value()) {
        continue;
      }
      const auto& tv = *v->as<TensorView>();
      const Sharding actual = sharding_of(tv);
      std::vector<int> expected(tv.rank(), -1);
      for (const Read& read : read_as) {
        const auto flow = axis_flow(expr_, read.input, o);
        for (size_t b = 0; flow.has_value() && b < read.sharding.mesh_axis.size(); ++b) {
          const int m = read.sharding.mesh_axis[b];
          if (m >= 0 && keeps_sharding(*flow, b, *read.tensor, tv, read.sharding.mesh->size(m)) &&
              !tv.logical()[flow->to_output[b]]->is_broadcast()) {
            expected[flow->to_output[b]] = m;
          }
        }
      }
      NVFUSE_CHECK_AS(ErrorKind::kUnsupported,
          actual.mesh == read_as.front().sharding.mesh && actual.mesh_axis == expected,
          print_expr(expr_), ": output ", tv.name(), " is distributed as ", actual.to_string(),
          ", not as its inputs give it; reshard it after the expr");
    }
  }

  Communication base(const TensorView& tensor, const DeviceMesh& mesh, int mesh_axis) const {
    Communication comm;
    comm.expr = &expr_;
    comm.tensor = &tensor;
    comm.mesh = mesh;
    comm.mesh_axis = mesh.rank() == 1 ? -1 : mesh_axis;
    return comm;
  }

  // A reduction of the only sharded axis of its only input onto one device
  // of that input's mesh: each device reduces its shard to a partial result
  // and a Reduce combines them on the root, which moves the reduced size
  // instead of gathering the input. Returns false when the expr is not one.
  bool lower_reduce_to_root(size_t input, const Sharding& in, const Sharding& out,
      std::vector<Communication>& result) const {
    const int64_t root = out.mesh->devices()[0];
    const int a = in.mesh->rank() == 1 ? in.logical_axis_on(0) : -1;
    if (out.mesh->size() != 1 || a < 0 || !in.mesh->contains(root) || tensor_outputs() != 1 ||
        tensor_inputs_on_meshes() != 1) {
      return false;
    }
    const auto flow = axis_flow(expr_, input);
    if (!flow.has_value() || !flow->summed[a]) {
      return false;
    }
    Communication comm = base(out_, *in.mesh, 0);
    comm.type = CommunicationType::Reduce;
    comm.root = root;
    comm.reduce_op = flow->combine;
    result.push_back(comm);
    return true;
  }

  size_t tensor_inputs_on_meshes() const {
    size_t count = 0;
    for (const Val* v : expr_.inputs()) {
      count += v->is<TensorView>() && v->as<TensorView>()->device_mesh().has_value();
    }
    return count;
  }

  void lower_mesh_change(const TensorView& in_tv, const Sharding& in, const Sharding& out,
      std::vector<Communication>& result) const {
    const bool from_one = in.mesh->size() == 1;
    const bool to_one = out.mesh->size() == 1;
    NVFUSE_CHECK_AS(ErrorKind::kUnsupported,
        (from_one || to_one) && in.mesh->rank() == 1 && out.mesh->rank() == 1, print_expr(expr_),
        " moves ", in_tv.name(), " from mesh ", *in.mesh, " to mesh ", *out.mesh,
        "; only moves from or to one device are built");
    Communication comm;
    comm.expr = &expr_;
    comm.tensor = &in_tv;
    if (from_one && to_one) {
      comm.type = CommunicationType::SendRecv;
      comm.root = in.mesh->devices()[0];
      comm.peer = out.mesh->devices()[0];
      comm.mesh = DeviceMesh(std::vector<int64_t>{comm.root});
    } else if (from_one) {
      comm.root = in.mesh->devices()[0];
      comm.mesh = *out.mesh;
      comm.axis = out.logical_axis_on(0);
      comm.type = comm.axis >= 0 ? CommunicationType::Scatter : CommunicationType::Broadcast;
    } else {
      comm.root = out.mesh->devices()[0];
      comm.mesh = *in.mesh;
      comm.axis = in.logical_axis_on(0);
      if (comm.axis < 0) {
        // Every device of the input's mesh holds it whole: the first sends.
        if (in.mesh->contains(comm.root)) {
          return;
        }
        comm.type = CommunicationType::SendRecv;
        comm.peer = comm.root;
        comm.root = in.mesh->devices()[0];
        comm.mesh = DeviceMesh(std::vector<int64_t>{comm.root});
      } else {
        NVFUSE_CHECK_AS(ErrorKind::kUnsupported, in.mesh->contains(comm.root), print_expr(expr_),
            " gathers ", in_tv.name(), " onto device ", comm.root,
            ", outside its mesh; that is not built yet");
        comm.type = CommunicationType::Gather;
      }
    }
    result.push_back(comm);
  }

  const Expr& expr_;
  const TensorView& out_;
  int partial_mesh_axis_ = -1;
  OpType partial_combine_ = OpType::add;
};

}  // namespace

Sharding with_local_slices(const AxisFlow& flow, const TensorView& in_tv, Sharding read,
    const TensorView& out_tv, const Sharding& out) {
  for (size_t c = 0; c < out.mesh_axis.size(); ++c) {
    const int m = out.mesh_axis[c];
    if (m < 0 || read.logical_axis_on(m) >= 0) {
      continue;
    }
    const int64_t b = source_axis(flow, in_tv, out_tv, static_cast<int64_t>(c), out.mesh->size(m));
    if (b >= 0 && read.mesh_axis[b] < 0 && !in_tv.logical()[b]->is_broadcast()) {
      read.mesh_axis[b] = m;
    }
  }
  return read;
}

std::vector<Communication> lower_reshardings(const Fusion& fusion) {
  std::vector<Communication> result;
  for (const Expr* expr : fusion.exprs()) {
    if (expr->output(0)->is<TensorView>()) {
      Lowerer(*expr).lower(result);
    }
  }
  return result;
}

}  // namespace nvfuse
