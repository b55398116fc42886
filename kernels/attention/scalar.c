/* Portable float32 attention kernels: the SIMD mapping layer with one lane, so the same
 * tiled online-softmax code runs on any machine and any head_dim. */
#include "attention.h"
#include "../simd/scalar.h"

#include "kernel_body.h"
