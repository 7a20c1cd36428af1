// The reference evaluator's flash-attention ops: torch's
// _scaled_dot_product_flash_attention on CUDA (with its dropout RNG state;
// without dropout, cuDNN's attention forward and backward where they
// apply, unless set_cudnn_attention(false)) and its CPU counterpart, which
// has no dropout.
#include <ATen/ATen.h>

#include <atomic>

#include "runtime/reference_evaluator.h"

namespace nvfuse {

namespace {

// torch's flash backward reads its RNG state as uint64 words; a state
// spelled Int (scripts for torch before 2.7) holds the same bytes.
at::Tensor rng_words(const at::Tensor& state) {
  return state.scalar_type() == at::kUInt64 ? state : state.view(at::kUInt64);
}

// torch's CPU flash attention cannot drop out (nor replay a CUDA RNG state).
void require_no_cpu_dropout(const at::Tensor& query, double dropout_p, const char* op) {
  if (query.is_cuda() || dropout_p == 0.0) {
    return;
  }
  NVFUSE_UNSUPPORTED(op, ": dropout_p = ", dropout_p,
      " needs CUDA tensors; torch's CPU flash attention has no dropout");
}

// torch's scaled_dot_product_attention masks causally from the top left;
// its flash kernels align the mask to the bottom right when the query and
// key lengths differ (and torch's dispatcher never sends them that case).
void require_square_causal(
    const at::Tensor& query, const at::Tensor& key, bool is_causal, const char* op) {
  NVFUSE_INPUT_CHECK(!is_causal || query.size(2) == key.size(2), op,
      ": is_causal needs equal query and key lengths, got ", query.size(2), " and ", key.size(2),
      " (flash attention would align the causal mask differently from "
      "torch's scaled_dot_product_attention)");
}

// Without dropout the forward runs on cuDNN's attention where it takes the
// inputs: what torch's scaled_dot_product_attention picks on Hopper, about
// 1.7x faster there than the flash kernel. Its logsumexp (natural log, as
// flash's) feeds the flash backward unchanged. nullopt where cuDNN
// declines (architecture, head size, build), and the flash kernel runs.
std::optional<std::tuple<at::Tensor, at::Tensor>> cudnn_attention(const at::Tensor& query,
    const at::Tensor& key, const at::Tensor& value, bool is_causal, std::optional<double> scale) {
  try {
    auto results =
        at::_scaled_dot_product_cudnn_attention(query, key, value, /*attn_bias=*/std::nullopt,
            /*compute_log_sumexp=*/true, /*dropout_p=*/0.0, is_causal,
            /*return_debug_mask=*/false, scale);
    return std::make_tuple(std::get<0>(results), std::get<1>(results));
  } catch (const c10::Error&) {
    return std::nullopt;
  }
}

// The backward's counterpart: without dropout, cuDNN's attention backward
// where it takes the inputs, as torch's autograd runs it after a cuDNN
// forward on Hopper (measured on the tensor-parallel attention step: the
// flash backward made it 0.92-0.96x DTensor's). It reads only the output
// and its logsumexp (natural log, [B, H, S, 1] for cuDNN), so a flash
// forward's feed it as well. nullopt where cuDNN declines.
std::optional<std::tuple<at::Tensor, at::Tensor, at::Tensor>> cudnn_attention_backward(
    const at::Tensor& grad_output, const at::Tensor& query, const at::Tensor& key,
    const at::Tensor& value, const at::Tensor& output, const at::Tensor& log_sumexp,
    const at::Tensor& philox_seed, const at::Tensor& philox_offset, bool is_causal,
    std::optional<double> scale) {
  try {
    return at::_scaled_dot_product_cudnn_attention_backward(grad_output, query, key, value, output,
        log_sumexp.unsqueeze(-1), philox_seed, philox_offset, /*attn_bias=*/at::Tensor(),
        /*cum_seq_q=*/at::Tensor(),
        /*cum_seq_k=*/at::Tensor(), /*max_q=*/query.size(2), /*max_k=*/key.size(2),
        /*dropout_p=*/0.0, is_causal, scale);
  } catch (const c10::Error&) {
    return std::nullopt;
  }
}

std::atomic<bool>& cudnn_attention_setting() {
  static std::atomic<bool> on{true};
  return on;
}

}  // namespace

void set_cudnn_attention(bool on) { cudnn_attention_setting() = on; }
bool cudnn_attention_on() { return cudnn_attention_setting(); }

void ReferenceEvaluator::handle(const SdpaFwdOp& e) {
  const at::Tensor query = tensor_of(e.input(0));
  const at::Tensor key = tensor_of(e.input(1));
  const at::Tensor value = tensor_of(e.input(2));
  const double dropout_p = scalar_of(e.input(3)).as_double();
  const bool is_causal = scalar_of(e.input(4)).as_bool();
  const std::optional<double> scale = e.has_scale()
      ? std::optional<double>(scalar_of(e.inputs().back()).as_double())
      : std::nullopt;
  require_no_cpu_dropout(query, dropout_p, "sdpfa_fwd");
  require_square_causal(query, key, is_causal, "sdpfa_fwd");
  if (query.is_cuda() && dropout_p == 0.0 && cudnn_attention_on()) {
    if (auto results = cudnn_attention(query, key, value, is_causal, scale)) {
      tensors_[e.output(0)] = std::get<0>(*results);
      tensors_[e.output(1)] = std::get<1>(*results).squeeze(-1);
      // Without dropout the backward never reads the RNG state.
      tensors_[e.output(2)] = at::zeros({2}, options_for(e.output(2)));
      tensors_[e.output(3)] = at::zeros({}, options_for(e.output(3)));
      return;
    }
  }
  if (query.is_cuda()) {
    auto results = at::_scaled_dot_product_flash_attention(query, key, value, dropout_p, is_causal,
        /*return_debug_mask=*/false, scale);
    tensors_[e.output(0)] = std::get<0>(results);
    tensors_[e.output(1)] = std::get<1>(results);
    tensors_[e.output(2)] = std::get<6>(results);
    tensors_[e.output(3)] = std::get<7>(results);
    return;
  }
  auto [output, log_sumexp] = at::_scaled_dot_product_flash_attention_for_cpu(
      query, key, value, dropout_p, is_causal, /*attn_mask=*/std::nullopt, scale);
  tensors_[e.output(0)] = output;
  tensors_[e.output(1)] = log_sumexp;
  tensors_[e.output(2)] = at::zeros({2}, options_for(e.output(2)));
  tensors_[e.output(3)] = at::zeros({}, options_for(e.output(3)));
}

void ReferenceEvaluator::handle(const SdpaBwdOp& e) {
  const at::Tensor grad_output = tensor_of(e.input(0));
  const at::Tensor query = tensor_of(e.input(1));
  const at::Tensor key = tensor_of(e.input(2));
  const at::Tensor value = tensor_of(e.input(3));
  const at::Tensor output = tensor_of(e.input(4));
  const at::Tensor log_sumexp = tensor_of(e.input(5));
  const double dropout_p = scalar_of(e.input(6)).as_double();
  const bool is_causal = scalar_of(e.input(7)).as_bool();
  const std::optional<double> scale = e.has_scale()
      ? std::optional<double>(scalar_of(e.inputs().back()).as_double())
      : std::nullopt;
  require_no_cpu_dropout(query, dropout_p, "sdpfa_bwd");
  require_square_causal(query, key, is_causal, "sdpfa_bwd");
  std::tuple<at::Tensor, at::Tensor, at::Tensor> grads;
  std::optional<std::tuple<at::Tensor, at::Tensor, at::Tensor>> from_cudnn;
  if (query.is_cuda() && dropout_p == 0.0 && cudnn_attention_on()) {
    from_cudnn = cudnn_attention_backward(grad_output, query, key, value, output, log_sumexp,
        tensor_of(e.input(8)), tensor_of(e.input(9)), is_causal, scale);
  }
  if (from_cudnn.has_value()) {
    grads = *from_cudnn;
  } else if (query.is_cuda()) {
    grads = at::_scaled_dot_product_flash_attention_backward(grad_output, query, key, value, output,
        log_sumexp,
        /*cum_seq_q=*/at::Tensor(), /*cum_seq_k=*/at::Tensor(),
        /*max_q=*/query.size(2), /*max_k=*/key.size(2), dropout_p, is_causal,
        rng_words(tensor_of(e.input(8))), rng_words(tensor_of(e.input(9))), scale);
  } else {
    grads = at::_scaled_dot_product_flash_attention_for_cpu_backward(grad_output, query, key, value,
        output, log_sumexp, dropout_p, is_causal, /*attn_mask=*/std::nullopt, scale);
  }
  tensors_[e.output(0)] = std::get<0>(grads);
  tensors_[e.output(1)] = std::get<1>(grads);
  tensors_[e.output(2)] = std::get<2>(grads);
}

}  // namespace nvfuse
