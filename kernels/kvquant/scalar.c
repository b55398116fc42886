/* Quantized-cache decode, scalar path: kvquant_body.h over the scalar SIMD mapping layer. */
#include "kvquant.h"

#include "../attention/attention.h"
#include "../attention/simd_scalar.h"

#include "kvquant_body.h"
