// The three symbols through which sgl-kernel 0.3.21's FlashMLA ops library
// (sgl_kernel/flashmla_ops.abi3.so, built against torch 2.9.1 and CUDA 12) does not fit
// torch 2.11 with CUDA 13, as the H200 host has it. scripts/device/pack-flashmla.sh renames
// the library's references to them (patchelf --rename-dynamic-symbols) to the extern "C"
// names below and adds this library to its DT_NEEDED, so only FlashMLA's calls come here;
// torch's own calls are untouched.
//
// 1. at::cuda::getCurrentDeviceProperties(): torch 2.11 returns CUDA 13's cudaDeviceProp, whose
//    layout differs from CUDA 12's (fields were removed in 13.0); the library reads major,
//    minor and multiProcessorCount at CUDA 12 offsets (0x168, 0x16c, 0x184). Here the struct is
//    filled by CUDA 12's own runtime, the library's libcudart.so.12.
// 2. c10::cuda::c10_cuda_check_implementation(int, const char*, const char*, int, bool): torch
//    2.11 takes the line as uint32_t (another mangled name). Same contract: nothing on
//    success; on an error a C++ exception, which torch's op binding raises in Python as a
//    RuntimeError.
// 3. c10::MessageLogger::MessageLogger(const char*, int, int): torch 2.11 takes a
//    SourceLocation. Only the library's sm_100 FMHA entry points log through it; reaching it
//    here is an error (exception, as above).
#include <dlfcn.h>

#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>

namespace {

constexpr int kMaxDevices = 64;
// sizeof(cudaDeviceProp) is 1032 bytes in CUDA 12; room to spare.
constexpr int kPropBytes = 4096;
alignas(16) unsigned char g_props[kMaxDevices][kPropBytes];
std::once_flag g_once[kMaxDevices];

void* cudart12() {
  static void* handle = dlopen("libcudart.so.12", RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw std::runtime_error(std::string("flashmla shim: dlopen libcudart.so.12: ") + dlerror());
  return handle;
}

template <typename F>
F cudart12_fn(const char* name) {
  void* f = dlsym(cudart12(), name);
  if (!f) throw std::runtime_error(std::string("flashmla shim: libcudart.so.12 has no ") + name);
  return reinterpret_cast<F>(f);
}

std::string error_text(int err) {
  try {
    auto name = cudart12_fn<const char* (*)(int)>("cudaGetErrorName");
    auto text = cudart12_fn<const char* (*)(int)>("cudaGetErrorString");
    return std::string(name(err)) + " (" + text(err) + ")";
  } catch (const std::exception&) {
    return "cudaError " + std::to_string(err);
  }
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void* lcd_flashmla_device_properties() {
  int dev = -1;
  int err = cudart12_fn<int (*)(int*)>("cudaGetDevice")(&dev);
  if (err) throw std::runtime_error("flashmla shim: cudaGetDevice: " + error_text(err));
  if (dev < 0 || dev >= kMaxDevices) throw std::runtime_error("flashmla shim: device index out of range");
  std::call_once(g_once[dev], [dev] {
    int e = cudart12_fn<int (*)(void*, int)>("cudaGetDeviceProperties_v2")(g_props[dev], dev);
    if (e) throw std::runtime_error("flashmla shim: cudaGetDeviceProperties: " + error_text(e));
  });
  return g_props[dev];
}

__attribute__((visibility("default"))) void lcd_flashmla_cuda_check(int err, const char* file,
                                                                     const char* func, int line,
                                                                     bool /*device_assertions*/) {
  if (err == 0) return;
  // as torch's own check does: clear the error, so that a later check does not find it again
  try {
    cudart12_fn<int (*)()>("cudaGetLastError")();
  } catch (const std::exception&) {
  }
  throw std::runtime_error("FlashMLA (sgl-kernel): CUDA error " + error_text(err) + " at " +
                           (file ? file : "?") + ":" + std::to_string(line) + " in " +
                           (func ? func : "?"));
}

__attribute__((visibility("default"))) void lcd_flashmla_message_logger(void* /*self*/, const char* file,
                                                                         int line, int severity) {
  throw std::runtime_error("FlashMLA (sgl-kernel) logged (severity " + std::to_string(severity) +
                           ") at " + (file ? file : "?") + ":" + std::to_string(line) +
                           ": a path this bridge does not support (sm_100 FMHA)");
}

}  // extern "C"
