/* Portable float32 linear attention (linear_body.h, one float per vector). */
#include "linear.h"

#include "../ssm/simd_scalar.h"
#define RECURRENT_NAME lm_linear_recurrent_f32_scalar
#define CHUNKED_NAME lm_linear_chunked_f32_scalar
#include "linear_body.h"
