// torch.Generator("nova") (Generator.cpp).
#pragma once

#include <ATen/core/Generator.h>

namespace nova::device {
/// A fresh nova generator of chip ``index`` (the current chip when negative).
at::Generator makeGenerator(c10::DeviceIndex index);
} // namespace nova::device
