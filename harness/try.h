/* TRY(call): evaluates call, an lm_status expression, and returns its status from the
 * enclosing function unless it is LM_OK. For harness sources whose functions return
 * lm_status; internal, not part of the library's interface. */
#ifndef LONGMIX_TRY_H
#define LONGMIX_TRY_H

#include "longmix.h"

#define TRY(call)                                                                              \
    do {                                                                                       \
        lm_status try_status_ = (call);                                                        \
        if (try_status_ != LM_OK)                                                              \
            return try_status_;                                                                \
    } while (0)

#endif
