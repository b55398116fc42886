/* Checked sizes and allocation budgets (see size_budget.h). */
#include "size_budget.h"

#include <stdint.h>
#include <stdio.h>

size_t lm_size_mul(size_t a, size_t b)
{
    size_t product;
    return __builtin_mul_overflow(a, b, &product) ? SIZE_MAX : product;
}

size_t lm_size_add(size_t a, size_t b)
{
    size_t sum;
    return __builtin_add_overflow(a, b, &sum) ? SIZE_MAX : sum;
}

size_t lm_size_product(const size_t *extents, size_t count)
{
    size_t product = 1;
    for (size_t i = 0; i < count; i++)
        product = lm_size_mul(product, extents[i]);
    return product;
}

lm_budget lm_budget_of(size_t limit) { return (lm_budget){limit, 0}; }

void lm_budget_add(lm_budget *budget, size_t count, size_t element_size)
{
    budget->bytes = lm_size_add(budget->bytes, lm_size_mul(count, element_size));
}

void lm_bytes_text(size_t bytes, char *text, size_t size)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double value = (double)bytes;
    int unit = 0;
    while (value >= 1024.0 && unit < 6) {
        value /= 1024.0;
        unit++;
    }
    if (unit == 0 || value >= 100.0 || value == (double)(long long)value)
        snprintf(text, size, "%.0f %s", value, units[unit]);
    else
        snprintf(text, size, "%.1f %s", value, units[unit]);
}

lm_status lm_budget_check(const lm_budget *budget, const char *what, lm_error *err)
{
    if (budget->bytes <= budget->limit)
        return LM_OK;
    char need[32], limit[32];
    lm_bytes_text(budget->limit, limit, sizeof limit);
    if (budget->bytes == SIZE_MAX)
        return lm_fail(err, LM_ERR_SCHEMA, "%s needs more bytes than a size_t holds (all its "
                       "buffers), more than the %s limit", what, limit);
    lm_bytes_text(budget->bytes, need, sizeof need);
    return lm_fail(err, LM_ERR_SCHEMA, "%s needs %s (all its buffers), more than the %s limit",
                   what, need, limit);
}
