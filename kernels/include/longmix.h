/* longmix public C API: the one header the harness, the tests and a user's program include.
 *
 * lm_core.h     status codes and messages, aligned memory, the NumPy-compatible generator,
 *               the ISA paths and the CPU's features;
 * lm_ops.h      the dispatch table generated from the kernel list (lm_kernels.h);
 * the families  each operator's float64 reference, its driver (which takes the table to run
 *               as `const lm_ops *ops`) and its argument structs.
 *
 * Every library function that can fail returns an lm_status and, when the caller passes a
 * non-NULL lm_error, writes a one-line message naming the offending argument. Library code
 * never prints, exits or aborts. The C++ benchmark shim sees lm_core.h only. */
#ifndef LONGMIX_H
#define LONGMIX_H

#include "lm_core.h"

#ifndef __cplusplus
#include "lm_ops.h"
#include "lm_reduce.h"

#include "../arith/arith.h"
#include "../attention/attention.h"
#include "../conv/conv.h"
#include "../core/peak.h"
#include "../delta/delta.h"
#include "../gemv/gemv.h"
#include "../kvquant/kvquant.h"
#include "../latent/latent.h"
#include "../layers/layers.h"
#include "../linear/linear.h"
#include "../scan/scan.h"
#include "../sparse/sparse.h"
#include "../ssm/ssm.h"
#include "../window/window.h"
#endif

#endif /* LONGMIX_H */
