// The public 16-bit float conversions are kernels/scalar.h's, the ones the interpreter and the
// generated kernels use, so a front end's inputs round exactly as a program's casts do.
#include "kernels/scalar.h"
#include "ptox/dtype.h"

namespace ptox {

uint16_t F32ToF16Bits(float x) { return scalar::F32ToF16(x); }
uint16_t F32ToBf16Bits(float x) { return scalar::F32ToBf16(x); }
float F16BitsToF32(uint16_t bits) { return scalar::F16ToF32(bits); }
float Bf16BitsToF32(uint16_t bits) { return scalar::Bf16ToF32(bits); }

}  // namespace ptox
