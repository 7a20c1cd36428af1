// The instructions of a pipelined host program (seed 004): a loop over
// chunks that puts chunk i on stream i % streams, communicates it and runs
// its GEMM there, so that chunk i's GEMM overlaps chunk i+1's
// communication. Stream waits go through events (cudaStreamWaitEvent), not
// the CPU (Gloo's waits on CPU tensors, and a symmetric buffer's first
// rendezvous, are the CPU's). The caller's stream is taken first and made current
// again last, and it waits for every worker stream before anything after
// the loop reads the results.
//
// Tensors live in numbered slots of a HostFrame (run_host_instructions.h);
// the lowerings (lower_allgather_gemm.h, lower_gemm_reduce_scatter.h)
// write the programs, NVFUSE_DUMP=host_ir prints them.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "ir/fusion.h"
#include "multidevice/communication.h"

namespace nvfuse {

struct HostFrame;
using Slot = int;

// Stream 0 is the caller's; workers are 1..streams.
struct GetCurrentStream {};

// The caller's stream becomes current again.
struct RestoreStream {};

// Inside the loop: worker stream 1 + i % streams becomes current.
struct SetWorkerStream {};

// Worker stream `index` (1 or more) becomes current: a loop whose streams
// have fixed roles (one copies, one multiplies).
struct SetStream {
  int index = 1;
};

// Event `i` (the loop's chunk) recorded on the current stream, and the
// current stream waiting for it (no CPU block).
struct RecordEvent {};
struct WaitEvent {};

// Events recorded on one side, waited for on the other, without blocking
// the CPU: every worker waits for the caller (the inputs are ready), or
// the caller for every worker (the results are).
struct WaitStreams {
  bool caller_waits = false;
};

// A buffer on the caller's stream, before the loop, so that no worker
// stream allocates and the caching allocator's reuse follows the caller.
struct Allocate {
  Slot dst;
  std::string shape;  // as printed
  std::function<at::Tensor(const HostFrame&)> make;
};

// How chunk i of a tensor is viewed.
enum class ChunkView {
  kSelect,           // select(axis, i): a logical stream axis
  kSelectWhole,      // select(axis, i), then drop the size-1 device axis after it
  kRows,             // narrow(axis, i * c, c), c = extent / chunks
  kInterleaved,      // axis viewed as [devices, chunks, c]; chunk i is [devices, c, ...]
  kSourceRows,       // the rows of device (this one + i) % devices: a loop over sources
  kDestinationRows,  // the rows of device (this one + 1 + i) % devices: this one last
};

struct ViewChunk {
  Slot dst;
  Slot src;
  ChunkView view;
  int64_t axis = 0;
};

// Every iteration below runs once per chunk, in order.
struct ForChunks;

// A communication of chunk `src` into chunk buffer `dst` among this
// device's team, posted on the current stream (c10d orders it after what
// that stream holds); its work is kept for a WaitCommunication.
struct PostCommunication {
  const Communication* communication;
  Slot dst;
  Slot src;
};

// The current stream waits for the last posted communication, or for all
// of them (NCCL: through an event; Gloo works on the CPU and is done).
struct WaitCommunication {
  bool all = false;
};

// The matmul or linear `op` on chunk tensors, written into `dst` (a view
// of the result), an ATen call on the current stream.
struct Gemm {
  const Expr* op;
  Slot dst;
  Slot a;
  Slot b;
  Slot bias = -1;
};

// The copy-engine all-gather through torch's symmetric memory
// (symmetric_memory.h), on the current stream: a barrier (no device still
// reads the previous call's shards), this device's shard `src` copied
// into its symmetric buffer, a barrier (every shard is there).
struct PublishShard {
  Slot src;
};

// Inside a loop over the other sources (i >= 1): the shard of device
// (this one + i) % devices, read from that device's symmetric buffer by
// the copy engine into `buffer`[i] (viewed as `dst`), on the current
// stream.
struct PullShard {
  Slot dst;
  Slot buffer;
};

// A barrier over the team, on the current stream: every device has
// reached it (its pushes done, its buffer read), `why` as printed.
struct Barrier {
  const char* why = "";
};

// The copy-engine reduce-scatter: a symmetric buffer of devices x `out`
// (grown by every device at once where it is too small).
struct ReservePartials {
  Slot out;
};

// Inside a loop over destinations: partial result `src` for device (this
// one + 1 + i) % devices, written by the copy engine into slot [this device]
// of that device's symmetric buffer, on the current stream.
struct PushPartial {
  Slot src;
};

// `out` = the sum over the slots of this device's symmetric buffer.
struct SumPartials {
  Slot out;
};

using HostInstruction =
    std::variant<GetCurrentStream, RestoreStream, SetWorkerStream, WaitStreams, Allocate, ViewChunk,
        ForChunks, PostCommunication, WaitCommunication, Gemm, SetStream, RecordEvent, WaitEvent,
        PublishShard, PullShard, Barrier, ReservePartials, PushPartial, SumPartials>;

struct ForChunks {
  std::vector<HostInstruction> body;
  int64_t first = 0;  // the first chunk: 1 where chunk 0 ran before the loop
};

// A pipelined program and what it needs to start: the slots of its
// inputs (filled by the caller) and of its result, the chunk count (or
// how to choose one), and the worker stream count.
struct HostLoopProgram {
  std::string title;  // "Allgather + linear", as printed
  std::vector<HostInstruction> instructions;
  std::vector<std::string> slot_names;
  std::vector<const Val*> inputs;  // slot k holds inputs[k]
  Slot result = -1;
  const Val* result_value = nullptr;
  // The communication and the GEMM it replaces in the host program.
  const Communication* communication = nullptr;
  const Expr* gemm = nullptr;
  // Chunks: `fixed_chunks` when the user asked (-1 for one per index of a
  // logical stream axis), else chosen per call from the extent of
  // `chunked_axis` of slot `chunked_slot` (divided by `chunked_divisor`).
  int64_t fixed_chunks = 0;
  Slot chunked_slot = 0;
  int64_t chunked_axis = 0;
  int64_t chunked_divisor = 1;
  std::string chunk_source;       // who asked, as printed
  bool chunk_per_device = false;  // a loop over source devices
  int64_t fixed_streams = 0;      // worker streams; 0: chunk_count.h's choice

  // A new slot named `name` (as printed).
  Slot add_slot(std::string name) {
    slot_names.push_back(std::move(name));
    return static_cast<Slot>(slot_names.size()) - 1;
  }

  std::string to_string(const std::string& indent) const;
  // Each instruction's kind ("GetCurrentStream", "ForChunks", ...) and its
  // loop depth, in order: the program as structure, for tests.
  std::vector<std::pair<int, std::string>> outline() const;
};

}  // namespace nvfuse
