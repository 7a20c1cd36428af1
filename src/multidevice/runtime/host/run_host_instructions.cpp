#include "multidevice/runtime/host/run_host_instructions.h"

#include <ATen/ATen.h>
#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <map>
#include <mutex>

#include "ir/all_exprs.h"
#include "ir/errors.h"
#include "multidevice/runtime/host/chunk_communication.h"
#include "multidevice/runtime/host/chunk_count.h"
#include "multidevice/runtime/host/chunk_views.h"
#include "multidevice/runtime/host/gemm_into.h"
#include "multidevice/runtime/host/symmetric_memory.h"

namespace nvfuse {

namespace {

const c10::impl::DeviceGuardImplInterface& cuda_guard() {
  return *c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
}

// The worker streams of `device`, taken from torch's pool once per process
// and reused, so that every call's chunks land on the same streams.
std::vector<c10::Stream> worker_streams(c10::Device device, int64_t count) {
  static std::mutex mutex;
  static std::map<c10::DeviceIndex, std::vector<c10::Stream>> pools;
  const std::lock_guard<std::mutex> lock(mutex);
  std::vector<c10::Stream>& pool = pools[device.index()];
  while (static_cast<int64_t>(pool.size()) < count) {
    pool.push_back(cuda_guard().getStreamFromGlobalPool(device, /*isHighPriority=*/false));
  }
  return std::vector<c10::Stream>(pool.begin(), pool.begin() + count);
}

// `waiter` waits for what `signaller` holds now, on the GPU.
void stream_wait(const c10::Stream& waiter, const c10::Stream& signaller) {
  c10::Event event(c10::DeviceType::CUDA);
  event.record(signaller);
  event.block(waiter);
}

class Interpreter {
 public:
  Interpreter(const HostLoopProgram& program, HostFrame& frame) : program_(program), f_(frame) {}

  void run(const std::vector<HostInstruction>& instructions) {
    for (const HostInstruction& instruction : instructions) {
      std::visit([&](const auto& i) { step(i); }, instruction);
    }
  }

 private:
  void step(const GetCurrentStream&) {
    if (f_.on_cuda) {
      const c10::Device device = f_.slots[0].device();
      f_.streams = {cuda_guard().getStream(device)};
      const int64_t workers =
          program_.fixed_streams > 0 ? program_.fixed_streams : worker_stream_count(f_.chunks);
      for (const c10::Stream& s : worker_streams(device, workers)) {
        f_.streams.push_back(s);
      }
    }
  }
  void step(const RestoreStream&) {
    if (f_.on_cuda) {
      cuda_guard().exchangeStream(f_.streams[0]);
    }
  }
  void step(const SetWorkerStream&) {
    if (f_.on_cuda) {
      const int64_t workers = static_cast<int64_t>(f_.streams.size()) - 1;
      cuda_guard().exchangeStream(f_.streams[1 + f_.index % workers]);
    }
  }
  void step(const SetStream& s) {
    if (f_.on_cuda) {
      cuda_guard().exchangeStream(f_.streams.at(s.index));
    }
  }
  void step(const RecordEvent&) {
    if (f_.on_cuda) {
      f_.events.resize(f_.chunks);
      f_.events[f_.index].emplace(c10::DeviceType::CUDA);
      f_.events[f_.index]->record(cuda_guard().getStream(f_.streams[0].device()));
    }
  }
  void step(const WaitEvent&) {
    if (f_.on_cuda) {
      f_.events.at(f_.index)->block(cuda_guard().getStream(f_.streams[0].device()));
    }
  }
  void step(const PublishShard& p) {
    if (f_.team->size() > 1) {
      symmetric_memory_hooks().publish(f_.slots[p.src], f_.group);
    }
  }
  void step(const PullShard& p) {
    at::Tensor dst = f_.slots[p.buffer].select(0, f_.index);
    symmetric_memory_hooks().pull(dst, (f_.member + f_.index) % f_.team->size(), f_.group);
    f_.slots[p.dst] = dst;
  }
  void step(const Barrier&) {
    if (f_.team->size() > 1) {
      symmetric_memory_hooks().barrier(f_.group);
    }
  }
  void step(const ReservePartials& r) {
    if (f_.team->size() > 1) {
      const at::Tensor& out = f_.slots[r.out];
      symmetric_memory_hooks().reserve(
          out, f_.team->size() * out.numel() * static_cast<int64_t>(out.element_size()), f_.group);
    }
  }
  void step(const PushPartial& p) {
    const int64_t devices = f_.team->size();
    symmetric_memory_hooks().push(
        f_.slots[p.src], (f_.member + 1 + f_.index) % devices, f_.member, f_.group);
  }
  void step(const SumPartials& s) {
    if (f_.team->size() > 1) {
      symmetric_memory_hooks().sum(f_.slots[s.out], f_.team->size(), f_.group);
    }
  }
  void step(const WaitStreams& w) {
    if (!f_.on_cuda) {
      return;
    }
    for (size_t k = 1; k < f_.streams.size(); ++k) {
      if (w.caller_waits) {
        stream_wait(f_.streams[0], f_.streams[k]);
      } else {
        stream_wait(f_.streams[k], f_.streams[0]);
      }
    }
  }
  void step(const Allocate& a) { f_.slots[a.dst] = a.make(f_); }
  void step(const ViewChunk& v) {
    f_.slots[v.dst] = view_chunk(f_.slots[v.src], v.view, v.axis, f_.chunks, f_.team->size(),
        f_.index, program_.slot_names[v.src], f_.member);
  }
  void step(const ForChunks& loop) {
    for (f_.index = loop.first; f_.index < f_.chunks; ++f_.index) {
      run(loop.body);
    }
  }
  void step(const PostCommunication& p) {
    f_.works.push_back(
        post_chunk_communication(*p.communication, *f_.team, f_.slots[p.dst], f_.slots[p.src]));
  }
  void step(const WaitCommunication& w) {
    if (w.all) {
      for (const CommunicationWork& work : f_.works) {
        if (work) {
          work->wait();
        }
      }
      f_.works.clear();
    } else if (!f_.works.empty() && f_.works.back()) {
      f_.works.back()->wait();
    }
  }
  void step(const Gemm& g) {
    const at::Tensor& b = f_.slots[g.b];
    std::optional<at::Tensor> bias;
    if (g.bias >= 0) {
      bias = f_.slots[g.bias];
    }
    gemm_into(f_.slots[g.dst], f_.slots[g.a], g.op->is<LinearOp>() ? b.t() : b, bias);
  }

  const HostLoopProgram& program_;
  HostFrame& f_;
};

// After an instruction threw: the caller's stream is current again and
// waits for what the workers and the posted communications still do, so
// that the frame's buffers (allocated on it) are not handed out again
// while queued work still writes them.
void settle_after_failure(HostFrame& frame) {
  if (!frame.on_cuda || frame.streams.empty()) {
    return;
  }
  cuda_guard().exchangeStream(frame.streams[0]);
  for (const CommunicationWork& work : frame.works) {
    try {
      if (work) {
        work->wait();
      }
    } catch (...) {
      // The failure being reported is the first one.
    }
  }
  for (size_t k = 1; k < frame.streams.size(); ++k) {
    stream_wait(frame.streams[0], frame.streams[k]);
  }
}

int64_t chunk_count(const HostLoopProgram& program, const HostFrame& frame) {
  if (program.chunk_per_device) {
    return frame.team->size();
  }
  const at::Tensor& chunked = frame.slots[program.chunked_slot];
  const int64_t extent = chunked.size(program.chunked_axis);
  if (program.fixed_chunks < 0) {
    return extent;
  }
  const int64_t rows = extent / program.chunked_divisor;
  if (program.fixed_chunks > 0) {
    NVFUSE_CHECK_AS(ErrorKind::kInput, rows % program.fixed_chunks == 0,
        program.slot_names[program.chunked_slot], ": its stream split asks for ",
        program.fixed_chunks, " chunks of axis ", program.chunked_axis, ", but its ", rows,
        " local rows do not divide into them");
    return program.fixed_chunks;
  }
  return choose_chunks(rows);
}

}  // namespace

void run_host_loop_program(const HostLoopProgram& program, HostFrame& frame) {
  NVFUSE_ASSERT(frame.team != nullptr && !frame.team->empty(), "a pipelined loop without a team");
  frame.on_cuda = frame.slots[0].is_cuda();
  frame.chunks = chunk_count(program, frame);
  frame.works.clear();
  frame.events.clear();
  Interpreter interpreter(program, frame);
  try {
    interpreter.run(program.instructions);
  } catch (...) {
    settle_after_failure(frame);
    throw;
  }
}

}  // namespace nvfuse
