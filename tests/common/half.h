// Half: the compiler's IEEE binary16 type, an independent f16 reference for the tests (conversions
// round to nearest even). GCC 12 has _Float16 in C++ on x86-64 only; on AArch64 __fp16 is the
// same IEEE format (Arm's alternative format exists only on AArch32).
#pragma once

namespace ptox::test {
#if defined(__aarch64__)
using Half = __fp16;
#else
using Half = _Float16;
#endif
}  // namespace ptox::test
