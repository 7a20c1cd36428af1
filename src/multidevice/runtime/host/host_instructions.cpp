#include "multidevice/runtime/host/host_instructions.h"

#include <iterator>
#include <sstream>

#include "ir/all_exprs.h"

namespace nvfuse {

namespace {

const char* view_name(ChunkView view) {
  switch (view) {
    case ChunkView::kSelect:
      return "select";
    case ChunkView::kSelectWhole:
      return "select (without its device axis)";
    case ChunkView::kRows:
      return "rows";
    case ChunkView::kInterleaved:
      return "rows per device";
    case ChunkView::kSourceRows:
      return "rows of device (me + i) % devices";
    case ChunkView::kDestinationRows:
      return "rows of device (me + 1 + i) % devices";
  }
  return "?";
}

const char* gemm_name(const Expr& op) { return op.is<LinearOp>() ? "linear" : "matmul"; }

class Printer {
 public:
  Printer(const HostLoopProgram& program, std::ostringstream& out) : program_(program), out_(out) {}

  void print(const std::vector<HostInstruction>& instructions, const std::string& indent) {
    for (const HostInstruction& instruction : instructions) {
      out_ << indent;
      std::visit([&](const auto& i) { line(i, indent); }, instruction);
    }
  }

 private:
  const std::string& slot(Slot s) const { return program_.slot_names.at(s); }

  void line(const GetCurrentStream&, const std::string&) {
    out_ << "GetCurrentStream into stream 0\n";
  }
  void line(const RestoreStream&, const std::string&) { out_ << "SetCurrentStream to stream 0\n"; }
  void line(const SetWorkerStream&, const std::string&) {
    out_ << "SetCurrentStream to stream ( 1 + i % streams )\n";
  }
  void line(const SetStream& s, const std::string&) {
    out_ << "SetCurrentStream to stream " << s.index << "\n";
  }
  void line(const RecordEvent&, const std::string&) {
    out_ << "RecordEvent i on the current stream\n";
  }
  void line(const WaitEvent&, const std::string&) {
    out_ << "The current stream waits for event i\n";
  }
  void line(const PublishShard& p, const std::string&) {
    out_ << "PublishShard " << slot(p.src)
         << ": barrier, copy into this device's symmetric buffer, barrier\n";
  }
  void line(const PullShard& p, const std::string&) {
    out_ << slot(p.dst) << " = " << slot(p.buffer)
         << "[i] = copy-engine read of device (me + i) % devices's shard\n";
  }
  void line(const Barrier& b, const std::string&) {
    out_ << "Barrier over the team (" << b.why << ")\n";
  }
  void line(const ReservePartials& r, const std::string&) {
    out_ << "ReservePartials: a symmetric buffer of [devices, *shape of " << slot(r.out) << "]\n";
  }
  void line(const PushPartial& p, const std::string&) {
    out_ << "PushPartial " << slot(p.src)
         << " into slot [me] of device (me + 1 + i) % devices's symmetric buffer (copy engine)\n";
  }
  void line(const SumPartials& s, const std::string&) {
    out_ << slot(s.out) << " = sum over the slots of this device's symmetric buffer\n";
  }
  void line(const WaitStreams& w, const std::string&) {
    out_ << (w.caller_waits ? "Stream 0 waits for an event on every worker stream\n"
                            : "Every worker stream waits for an event on stream 0\n");
  }
  void line(const Allocate& a, const std::string&) {
    out_ << slot(a.dst) << " = ALLOCATE(" << a.shape << ") on stream 0\n";
  }
  void line(const ViewChunk& v, const std::string&) {
    out_ << slot(v.dst) << " = " << view_name(v.view) << "( " << slot(v.src)
         << ", axis = " << v.axis << ", chunk = i )\n";
  }
  void line(const ForChunks& f, const std::string& indent) {
    out_ << (f.first == 0 ? std::string("FOR i in range(chunks):\n")
                          : "FOR i in range(" + std::to_string(f.first) + ", chunks):\n");
    print(f.body, indent + "  ");
  }
  void line(const PostCommunication& p, const std::string&) {
    out_ << "Communication " << name_of(p.communication->type)
         << " (team = mesh, input = " << slot(p.src) << ", output = " << slot(p.dst)
         << ") on the current stream\n";
  }
  void line(const WaitCommunication& w, const std::string&) {
    out_ << (w.all ? "Wait every communication of the loop\n" : "Wait Communication of chunk i\n");
  }
  void line(const Gemm& g, const std::string&) {
    out_ << slot(g.dst) << " = " << gemm_name(*g.op) << "( " << slot(g.a) << ", " << slot(g.b);
    if (g.bias >= 0) {
      out_ << ", " << slot(g.bias);
    }
    out_ << " )\n";
  }

  const HostLoopProgram& program_;
  std::ostringstream& out_;
};

const char* kind_of(const HostInstruction& instruction) {
  static constexpr const char* kKinds[] = {"GetCurrentStream", "RestoreStream", "SetWorkerStream",
      "WaitStreams", "Allocate", "ViewChunk", "ForChunks", "PostCommunication", "WaitCommunication",
      "Gemm", "SetStream", "RecordEvent", "WaitEvent", "PublishShard", "PullShard", "Barrier",
      "ReservePartials", "PushPartial", "SumPartials"};
  static_assert(std::size(kKinds) == std::variant_size_v<HostInstruction>);
  return kKinds[instruction.index()];
}

void outline_into(const std::vector<HostInstruction>& instructions, int depth,
    std::vector<std::pair<int, std::string>>& out) {
  for (const HostInstruction& instruction : instructions) {
    out.emplace_back(depth, kind_of(instruction));
    if (const auto* loop = std::get_if<ForChunks>(&instruction)) {
      outline_into(loop->body, depth + 1, out);
    }
  }
}

}  // namespace

std::vector<std::pair<int, std::string>> HostLoopProgram::outline() const {
  std::vector<std::pair<int, std::string>> out;
  outline_into(instructions, 0, out);
  return out;
}

std::string HostLoopProgram::to_string(const std::string& indent) const {
  std::ostringstream out;
  out << title << " (chunks: " << chunk_source << "; worker streams: ";
  if (fixed_streams > 0) {
    out << fixed_streams << ")\n";
  } else {
    out << "min(chunks, NVFUSE_OVERLAP_STREAMS or 2))\n";
  }
  Printer(*this, out).print(instructions, indent);
  return out.str();
}

}  // namespace nvfuse
