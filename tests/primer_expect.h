/* Expected lesson numbers for the refs_* suites, read from contracts/primer.json at test
 * time (never typed into a test). Static inline so each suite gets its own copy. */
#ifndef LONGMIX_TESTS_PRIMER_EXPECT_H
#define LONGMIX_TESTS_PRIMER_EXPECT_H

#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>

static inline const json_t *primer_entry(const char *id)
{
    static json_t *root = NULL;
    if (root == NULL) {
        json_error_t error;
        root = json_load_file("contracts/primer.json", 0, &error);
        cr_assert_not_null(root, "contracts/primer.json: %s (line %d)", error.text, error.line);
    }
    const json_t *entries = json_object_get(root, "entries");
    for (size_t i = 0; i < json_array_size(entries); i++) {
        const json_t *e = json_array_get(entries, i);
        if (strcmp(json_string_value(json_object_get(e, "id")), id) == 0)
            return e;
    }
    cr_assert_fail("contracts/primer.json has no entry %s", id);
    return NULL;
}

/* Element i of the entry's expected value (a number, a boolean or an array). */
static inline double primer_expected(const char *id, size_t i)
{
    const json_t *expected = json_object_get(primer_entry(id), "expected");
    if (json_is_array(expected)) {
        cr_assert_lt(i, json_array_size(expected), "%s has no element %zu", id, i);
        expected = json_array_get(expected, i);
    }
    if (json_is_boolean(expected))
        return json_is_true(expected) ? 1.0 : 0.0;
    cr_assert(json_is_number(expected), "%s: expected must be a number", id);
    return json_number_value(expected);
}

static inline size_t primer_expected_count(const char *id)
{
    const json_t *expected = json_object_get(primer_entry(id), "expected");
    return json_is_array(expected) ? json_array_size(expected) : 1;
}

/* got within the entry's own tolerance (numpy.isclose) of element i. */
#define primer_assert_close(id, i, got)                                                    \
    do {                                                                                   \
        const json_t *entry_ = primer_entry(id);                                           \
        double want_ = primer_expected(id, i), got_ = (got);                               \
        double rtol_ = json_number_value(json_object_get(entry_, "rtol"));                 \
        double atol_ = json_number_value(json_object_get(entry_, "atol"));                 \
        cr_assert(fabs(got_ - want_) <= atol_ + rtol_ * fabs(want_),                       \
                  "%s[%zu]: expected %.17g, got %.17g (rtol %g atol %g)", id, (size_t)(i), \
                  want_, got_, rtol_, atol_);                                              \
    } while (0)

/* A call that must fail with `status` and a message containing `text`. */
#define assert_rejects(call, status, text)                                                 \
    do {                                                                                   \
        lm_error err_;                                                                     \
        lm_error_clear(&err_);                                                             \
        lm_status got_ = (call);                                                           \
        cr_assert_eq(got_, (status), "%s: status %s, message '%s'", #call,                 \
                     lm_status_name(got_), err_.message);                                  \
        cr_assert(strstr(err_.message, (text)) != NULL, "%s: message '%s' lacks '%s'",      \
                  #call, err_.message, (text));                                            \
    } while (0)

#endif
