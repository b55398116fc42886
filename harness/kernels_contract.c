/* Placeholder until the kernels checker lands: reports that this build cannot check it. */
#include "contract.h"

lm_status lm_verify_kernels(const lm_contract *contract, lm_report *report, lm_error *err)
{
    (void)report;
    return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: this build has no kernels checker yet",
                   contract->path);
}
