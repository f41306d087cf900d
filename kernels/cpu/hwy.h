// Highway for the tile library, with static dispatch only: generated code is compiled once per
// target ISA, so Highway's static target is the build's own (-march) and nothing dispatches at run
// time.
#pragma once

// Highway 1.0 enables its AVX2 / AVX-512 targets only with -maes -mpclmul, which x86-64-v3 / v4 do
// not imply; without this the static target would fall back to SSSE3. No AES / CLMUL op is used.
#ifndef HWY_DISABLE_PCLMUL_AES
#define HWY_DISABLE_PCLMUL_AES
#endif
// On AArch64 with GCC, Highway 1.0 compiles its NEON ops for run-time dispatch under
// target("+crypto"), which functions built without +crypto cannot inline. Saying the toolchain
// cannot detect features at run time (HWY_HAVE_RUNTIME_DISPATCH 0) leaves the ops under -march.
#if defined(__aarch64__) && !defined(TOOLCHAIN_MISS_SYS_AUXV_H)
#define TOOLCHAIN_MISS_SYS_AUXV_H
#endif
#include <hwy/highway.h>
