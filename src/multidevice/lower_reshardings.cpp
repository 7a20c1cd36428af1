#include "multidevice/lower_reshardings.h"

#include "ir/all_exprs.h"
#include "ir/errors.h"
#include "ir/printer.h"
#include "multidevice/axis_flow.h"
#include "multidevice/sharding.h"

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
    size_t tensor_outputs = 0;
    for (const Val* v : expr_.outputs()) {
      tensor_outputs += v->is<TensorView>();
    }
    for (const Val* v : expr_.inputs()) {
      NVFUSE_CHECK_AS(
          ErrorKind::kUnsupported,
          tensor_outputs < 2 || !v->is<TensorView>() ||
              !sharding_of(*v->as<TensorView>()).is_sharded(),
          print_expr(expr_), " reads sharded ", v->as<TensorView>()->name(),
          " and has several outputs; sharding such exprs is not built yet");
    }
    bool partial = false;
    std::optional<AxisFlow> partial_flow;
    int partial_mesh_axis = -1;
    for (size_t i = 0; i < expr_.inputs().size(); ++i) {
      const Val* v = expr_.input(i);
      if (!v->is<TensorView>() || !v->as<TensorView>()->device_mesh().has_value()) {
        continue;
      }
      const auto& in_tv = *v->as<TensorView>();
      const Sharding in = sharding_of(in_tv);
      if (*in.mesh != *out.mesh) {
        lower_mesh_change(in_tv, in, out, result);
        continue;
      }
      if (!in.is_sharded()) {
        continue;
      }
      const auto flow = axis_flow(expr_, i);
      NVFUSE_CHECK_AS(
          ErrorKind::kUnsupported, flow.has_value(), "sharded ", in_tv.name(),
          " flows through ", print_expr(expr_), ", which sharding does not follow yet");
      for (size_t a = 0; a < in.mesh_axis.size(); ++a) {
        const int m = in.mesh_axis[a];
        if (m < 0) {
          continue;
        }
        if (flow->summed[a]) {
          NVFUSE_CHECK_AS(
              ErrorKind::kUnsupported, !expr_.is<VarMeanOp>(),
              print_expr(expr_), " reduces sharded axis ", a, " of ", in_tv.name(),
              "; combining variances across devices is not built yet");
          partial = true;
          partial_flow = flow;
          partial_mesh_axis = m;
          continue;
        }
        const int64_t c = flow->to_output[a];
        if (c < 0 || out.mesh_axis[c] == m) {
          continue;
        }
        Communication comm = base(in_tv, *in.mesh, m);
        comm.axis = static_cast<int64_t>(a);
        const int other = out.logical_axis_on(m);
        if (other >= 0) {
          comm.type = CommunicationType::AllToAll;
          comm.to_axis = other;
        } else {
          comm.type = CommunicationType::Allgather;
        }
        result.push_back(comm);
      }
    }
    if (partial) {
      NVFUSE_CHECK_AS(
          ErrorKind::kUnsupported, !(expr_.is<LinearOp>() && expr_.inputs().size() > 2),
          print_expr(expr_), " contracts a sharded axis and adds a bias, which every "
          "device would add to its partial result; apply the bias after the linear");
      Communication comm = base(out_, *out.mesh, partial_mesh_axis);
      comm.reduce_op = partial_flow->combine;
      const int scattered = out.logical_axis_on(partial_mesh_axis);
      comm.type = scattered >= 0 ? CommunicationType::ReduceScatter
                                 : CommunicationType::Allreduce;
      comm.axis = scattered;
      result.push_back(comm);
    }
  }

 private:
  Communication base(const TensorView& tensor, const DeviceMesh& mesh, int mesh_axis) const {
    Communication comm;
    comm.expr = &expr_;
    comm.tensor = &tensor;
    comm.mesh = mesh;
    comm.mesh_axis = mesh.rank() == 1 ? -1 : mesh_axis;
    return comm;
  }

  void lower_mesh_change(const TensorView& in_tv, const Sharding& in, const Sharding& out,
                         std::vector<Communication>& result) const {
    const bool from_one = in.mesh->size() == 1;
    const bool to_one = out.mesh->size() == 1;
    NVFUSE_CHECK_AS(
        ErrorKind::kUnsupported,
        (from_one || to_one) && in.mesh->rank() == 1 && out.mesh->rank() == 1,
        print_expr(expr_), " moves ", in_tv.name(), " from mesh ", *in.mesh,
        " to mesh ", *out.mesh, "; only moves from or to one device are built");
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
        NVFUSE_CHECK_AS(
            ErrorKind::kUnsupported, in.mesh->contains(comm.root), print_expr(expr_),
            " gathers ", in_tv.name(), " onto device ", comm.root,
            ", outside its mesh; that is not built yet");
        comm.type = CommunicationType::Gather;
      }
    }
    result.push_back(comm);
  }

  const Expr& expr_;
  const TensorView& out_;
};

}  // namespace

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
