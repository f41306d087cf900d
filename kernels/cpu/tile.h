// The CPU tile library: everything generated kernels call (one function per interpreter op).
#pragma once

#include "kernels/cpu/core.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/layout.h"
#include "kernels/cpu/memory.h"
// Generated kernels include only the heavy headers they use: reduce.h pulls in Highway and
// matmul.h the x86 intrinsics, whose parse time dominates the cold compile of small kernels.
#ifndef PTOX_CPU_NO_MATMUL
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/qmatmul.h"
#endif
#ifndef PTOX_CPU_NO_REDUCE
#include "kernels/cpu/reduce.h"
#endif
#include "kernels/cpu/scalar_ops.h"

// Generated code exports exactly one symbol; the library builds with -fvisibility=hidden.
#define PTOX_EXPORT extern "C" __attribute__((visibility("default")))
