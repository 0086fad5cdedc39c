// Torch ops lcd_flashmla::get_mla_decoding_metadata and lcd_flashmla::fwd_kvcache_mla, compiled
// against torch 2.11's headers, that call sgl-kernel 0.3.21's FlashMLA entry points
// (flashmla_ops.abi3.so, built against torch 2.9.1) as plain C++ functions, so that the
// library's own op wrappers never run. scripts/device/pack-flashmla.sh builds it beside the
// library (this file's DT_NEEDED) and the adapter (flashmla.py) loads it.
//
// Why not the library's own sgl_kernel:: ops: their boxed wrappers are torch 2.9.1 inline code.
// torch 2.11 changed how a tensor's reference count works once Python owns the tensor (one
// 64-bit word at +0x8 whose top bit marks a Python object, and a call to decref_pyobject() when
// the count falls from 2 to 1); the 2.9.1 code decrements the low 32 bits only. Releasing the
// arguments on the op's stack (torch::jit::drop) and reassigning q inside fwd_kvcache_mla are
// such 2 -> 1 falls on Python-owned tensors: each call would keep one reference to each input
// (the KV cache among them) for the life of the process. Here torch 2.11's own code owns the
// stack, and every tensor the library sees has at least one more owner (a local copy) for the
// whole call, so no reference count the library changes crosses 1 <-> 2. The results are
// tensors the library allocated (no Python object yet), returned by value.
//
// The two functions' signatures are the library's exported symbols (nm -D: fwd_kvcache_mla
// _Z15fwd_kvcache_mlaRN2at6TensorERKS0_lS3_S3_dbS3_S3_RKbRKSt8optionalIS0_E and
// get_mla_decoding_metadata _Z25get_mla_decoding_metadataRN2at6TensorEllSt8optionalIlEbS3_);
// the schemas follow the ones sgl-kernel registers for them (argument order and types; the
// cache argument is named kv_cache there). The bridge exports no symbol (pack-flashmla.sh links
// it with a version script that makes every symbol local), so the library keeps binding its
// own copies of torch's inline code.
#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include <cstdint>
#include <optional>
#include <vector>

// sgl-kernel 0.3.21 flashmla_ops.abi3.so (csrc/flashmla_extension.cc and FlashMLA's api)
std::vector<at::Tensor> get_mla_decoding_metadata(
    at::Tensor& seqlens_k, int64_t num_q_tokens_per_head_k, int64_t h_k,
    std::optional<int64_t> h_q, bool is_fp8_kvcache, std::optional<int64_t> topk);
std::vector<at::Tensor> fwd_kvcache_mla(
    at::Tensor& q, const at::Tensor& kcache, int64_t head_size_v, const at::Tensor& seqlens_k,
    const at::Tensor& block_table, double softmax_scale, bool is_causal,
    const at::Tensor& tile_scheduler_metadata, const at::Tensor& num_splits,
    const bool& is_fp8, const std::optional<at::Tensor>& indices);

namespace {

std::vector<at::Tensor> metadata(const at::Tensor& seqlens_k, int64_t num_q_tokens_per_head_k,
                                 int64_t h_k, std::optional<int64_t> h_q, bool is_fp8_kvcache,
                                 std::optional<int64_t> topk) {
  at::Tensor seqlens = seqlens_k;  // an owner of our own for the call (see above)
  return get_mla_decoding_metadata(seqlens, num_q_tokens_per_head_k, h_k, h_q, is_fp8_kvcache,
                                   topk);
}

std::vector<at::Tensor> decode(const at::Tensor& q, const at::Tensor& kcache, int64_t head_size_v,
                               const at::Tensor& seqlens_k, const at::Tensor& block_table,
                               double softmax_scale, bool is_causal,
                               const at::Tensor& tile_scheduler_metadata,
                               const at::Tensor& num_splits, bool is_fp8,
                               const std::optional<at::Tensor>& indices) {
  // local owners of every tensor for the call; the library reassigns its q argument, which
  // here is this local copy
  at::Tensor q_local = q, k = kcache, lens = seqlens_k, table = block_table;
  at::Tensor meta = tile_scheduler_metadata, splits = num_splits;
  std::optional<at::Tensor> idx = indices;
  const bool fp8 = is_fp8;
  return fwd_kvcache_mla(q_local, k, head_size_v, lens, table, softmax_scale, is_causal, meta,
                         splits, fp8, idx);
}

}  // namespace

TORCH_LIBRARY(lcd_flashmla, m) {
  m.def(
      "get_mla_decoding_metadata(Tensor seqlens_k, int num_q_tokens_per_head_k, int h_k, "
      "int? h_q, bool is_fp8_kvcache, int? topk) -> Tensor[]");
  m.def(
      "fwd_kvcache_mla(Tensor q, Tensor kcache, int head_size_v, Tensor seqlens_k, "
      "Tensor block_table, float softmax_scale, bool is_causal, Tensor tile_scheduler_metadata, "
      "Tensor num_splits, bool is_fp8, Tensor? indices) -> Tensor[]");
}

// CUDA tensors only, as sgl-kernel registers them: a CPU, meta or fake tensor gets torch's "no
// kernel for this backend" error instead of reaching the library
TORCH_LIBRARY_IMPL(lcd_flashmla, CUDA, m) {
  m.impl("get_mla_decoding_metadata", &metadata);
  m.impl("fwd_kvcache_mla", &decode);
}
