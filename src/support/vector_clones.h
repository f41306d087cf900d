// PTOX_VECTOR_CLONES: a hot host-side loop built once per x86 vector width (AVX-512, AVX2 and the
// baseline), picked at load time; the rest of the library targets the baseline ISA. Elsewhere
// (AArch64: NEON is the baseline) the function is built once.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#define PTOX_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PTOX_VECTOR_CLONES
#endif
