/* Portable float32 (gated) delta rule (delta_body.h, one float per vector); the bf16 slot
 * widens its inputs to float32. */
#include "delta.h"

#include "../simd/scalar.h"
#define RECURRENT_NAME lm_delta_recurrent_f32_scalar
#define CHUNKED_NAME lm_delta_chunked_f32_scalar
#define CHUNKED_BF16_NAME lm_delta_chunked_bf16_scalar
#include "delta_body.h"
