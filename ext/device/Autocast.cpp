// torch.autocast("nova"): the same op lists and policies as CUDA's autocast
// (ATen's AT_FORALL_* lists): matmuls and convolutions in the autocast dtype,
// reductions, norms and losses in float32, mixed-input ops promoted.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

// In at::autocast, as ATen's own registrations are: the op lists name
// Tensor, Scalar and ScalarType unqualified.
namespace at::autocast {
namespace {

#define ADD_NS(RAW_OP) at::RAW_OP
#define NOVA_LOW(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define NOVA_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define NOVA_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define NOVA_DIFFERENT_REDISPATCH(...) KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE(__VA_ARGS__)
#define NOVA_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  AT_FORALL_LOWER_PRECISION_FP(NOVA_LOW)
  AT_FORALL_FP32(NOVA_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(NOVA_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(NOVA_DIFFERENT_REDISPATCH)
  AT_FORALL_PROMOTE(NOVA_PROMOTE)
}

} // namespace
} // namespace at::autocast
