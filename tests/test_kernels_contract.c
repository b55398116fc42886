/* The kernel-contract checker (schema longmix-kernels/1): the C recipes draw what NumPy
 * drew when contracts/kernels.json was built, a wrong expected value fails, and a case the
 * build cannot run is an error that names it. Expected numbers come from the contract file
 * (written by scripts/build_kernel_contract.py with NumPy), never from this code. */
#include "../harness/contract.h"
#include "../harness/registry.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char contract_path[] = "contracts/kernels.json";

static json_t *load_contract(void)
{
    json_error_t error;
    json_t *root = json_load_file(contract_path, JSON_REJECT_DUPLICATES, &error);
    cr_assert_not_null(root, "%s:%d: %s (run from the repository root)", contract_path,
                       error.line, error.text);
    return root;
}

static json_t *find_case(json_t *root, const char *id)
{
    json_t *cases = json_object_get(root, "cases");
    for (size_t i = 0; i < json_array_size(cases); i++) {
        json_t *c = json_array_get(cases, i);
        if (strcmp(json_string_value(json_object_get(c, "id")), id) == 0)
            return c;
    }
    cr_assert_fail("case %s is not in %s", id, contract_path);
    return NULL;
}

/* A contract holding only `kcase` (a deep copy), for lm_verify_kernels. */
static json_t *contract_of(const json_t *kcase)
{
    json_t *root = json_object();
    json_object_set_new(root, "schema", json_string("longmix-kernels/1"));
    json_t *cases = json_array();
    json_array_append_new(cases, json_deep_copy(kcase));
    json_object_set_new(root, "cases", cases);
    return root;
}

static double number_at(const json_t *kcase, const char *group, const char *key)
{
    return json_number_value(json_object_get(json_object_get(kcase, group), key));
}

/* Runs `id` on `ops` (NULL: float64 reference) and compares every sampled element with
 * the contract; the tiny cases sample every element. */
static void expect_samples_match(const char *id, const lm_ops *ops)
{
    json_t *root = load_contract();
    const json_t *json = find_case(root, id);
    lm_kcase kcase;
    lm_kout out;
    lm_error err;
    cr_assert_eq(lm_kcase_open(&kcase, json, 0, &err), LM_OK, "%s", err.message);
    cr_assert_eq(lm_kcase_run(&kcase, ops, &out, &err), LM_OK, "%s", err.message);
    const json_t *expected = json_object_get(json, "expected");
    const json_t *samples = json_object_get(expected, "samples");
    cr_assert_eq((long long)out.count, json_integer_value(json_object_get(expected, "count")));
    double rtol = number_at(json, "tolerance", "rtol");
    double atol = number_at(json, "tolerance", "atol");
    for (size_t k = 0; k < json_array_size(samples); k++) {
        const json_t *s = json_array_get(samples, k);
        size_t index = (size_t)json_integer_value(json_object_get(s, "index"));
        double want = json_real_value(json_object_get(s, "value"));
        double scale = json_real_value(json_object_get(s, "scale"));
        cr_assert(fabs(out.values[index] - want) <= atol + rtol * scale,
                  "%s on %s: y[%zu] = %.17g, NumPy %.17g (bound %g)", id,
                  ops ? lm_isa_name(ops->isa) : "ref", index, out.values[index], want,
                  atol + rtol * scale);
    }
    lm_kcase_release(&kcase);
    json_decref(root);
}

Test(kcontract, recipe_draws_match_numpy_in_float64)
{
    /* float64 end to end: a single misplaced draw would miss by O(1), the bound is 1e-13 */
    expect_samples_match("gemv_rowdot.f64.n9_d23", NULL);
}

Test(kcontract, tiny_case_matches_numpy_on_every_path)
{
    for (int isa = 0; isa < LM_ISA_COUNT; isa++)
        if (lm_isa_available((lm_isa)isa))
            expect_samples_match("gemv_rowdot.f32.n3_d5", lm_ops_for((lm_isa)isa));
}

/* Verifies a one-case contract and returns the report (caller frees). */
static lm_report *verify_one(json_t *root, lm_status want_status, lm_error *err)
{
    lm_contract contract = {.path = "test-kernels.json", .root = root};
    lm_report *report = lm_report_new();
    cr_assert_not_null(report);
    lm_status status = lm_verify_kernels(&contract, report, err);
    cr_assert_eq(status, want_status, "status %s: %s", lm_status_name(status), err->message);
    return report;
}

/* The core kernels' cases of the contract (the other families test their own). */
Test(kcontract, every_core_case_passes)
{
    json_t *root = load_contract();
    json_t *cases = json_object_get(root, "cases");
    for (size_t i = json_array_size(cases); i-- > 0;)
        if (strcmp(json_string_value(json_object_get(json_array_get(cases, i), "kernel")),
                   "gemv_rowdot") != 0)
            json_array_remove(cases, i);
    cr_assert_geq(json_array_size(cases), 10);
    lm_error err;
    lm_report *report = verify_one(root, LM_OK, &err);
    cr_assert_eq(lm_report_failed(report), 0);
    cr_assert_gt(lm_report_passed(report), 4 * json_array_size(cases));
    lm_report_free(report);
    json_decref(root);
}

Test(kcontract, wrong_expected_value_fails)
{
    json_t *root = load_contract();
    json_t *one = contract_of(find_case(root, "gemv_rowdot.f32.n7_d37"));
    json_t *kcase = json_array_get(json_object_get(one, "cases"), 0);
    json_t *expected = json_object_get(kcase, "expected");
    json_t *sample = json_array_get(json_object_get(expected, "samples"), 0);
    double value = json_real_value(json_object_get(sample, "value"));
    double scale = json_real_value(json_object_get(sample, "scale"));
    /* off by 100 times the bound: every path must fail exactly this one check */
    double bound = number_at(kcase, "tolerance", "atol") +
                   number_at(kcase, "tolerance", "rtol") * scale;
    json_object_set_new(sample, "value", json_real(value + 100.0 * bound));
    lm_error err;
    lm_report *report = verify_one(one, LM_OK, &err);
    size_t paths = 0;
    for (int isa = 0; isa < LM_ISA_COUNT; isa++) /* avx512vnni has no gemv of its own */
        paths += lm_isa_available((lm_isa)isa) && !lm_isa_derived((lm_isa)isa);
    const char *forced = getenv("LONGMIX_ISA");
    if (forced != NULL && forced[0] != '\0')
        paths = 1;
    cr_assert_eq(lm_report_failed(report), paths, "one failure per ISA path (%zu)", paths);
    cr_assert_gt(lm_report_passed(report), 0);
    lm_report_free(report);
    json_decref(one);
    json_decref(root);
}

Test(kcontract, unknown_kernel_is_a_schema_error_naming_the_case)
{
    json_t *root = load_contract();
    json_t *one = contract_of(find_case(root, "gemv_rowdot.f32.n3_d5"));
    json_t *kcase = json_array_get(json_object_get(one, "cases"), 0);
    json_object_set_new(kcase, "kernel", json_string("no_such_kernel"));
    lm_error err;
    lm_report *report = verify_one(one, LM_ERR_SCHEMA, &err);
    cr_assert(strstr(err.message, "gemv_rowdot.f32.n3_d5") != NULL, "%s", err.message);
    cr_assert(strstr(err.message, "no_such_kernel") != NULL, "%s", err.message);
    cr_assert_eq(lm_report_failed(report) + lm_report_passed(report), 0, "nothing ran");
    lm_report_free(report);
    json_decref(one);
    json_decref(root);
}

Test(kcontract, misspelt_option_and_bad_shape_are_schema_errors)
{
    json_t *root = load_contract();
    json_t *one = contract_of(find_case(root, "gemv_rowdot.f32.n3_d5"));
    json_t *kcase = json_array_get(json_object_get(one, "cases"), 0);
    json_object_set_new(json_object_get(kcase, "options"), "trnspose", json_true());
    lm_error err;
    lm_report_free(verify_one(one, LM_ERR_SCHEMA, &err));
    cr_assert(strstr(err.message, "trnspose") != NULL, "%s", err.message);

    json_object_clear(json_object_get(kcase, "options"));
    json_object_set_new(json_object_get(kcase, "shape"), "n", json_integer(-2));
    lm_report_free(verify_one(one, LM_ERR_SCHEMA, &err));
    cr_assert(strstr(err.message, "shape.n") != NULL, "%s", err.message);

    json_object_set_new(json_object_get(kcase, "shape"), "n", json_true());
    lm_report_free(verify_one(one, LM_ERR_TYPE, &err));
    cr_assert(strstr(err.message, "shape.n") != NULL, "%s", err.message);
    json_decref(one);
    json_decref(root);
}

Test(kcontract, missing_fields_and_repeated_ids_are_schema_errors)
{
    json_t *root = load_contract();
    json_t *one = contract_of(find_case(root, "gemv_rowdot.f32.n3_d5"));
    json_t *cases = json_object_get(one, "cases");
    json_array_append_new(cases, json_deep_copy(json_array_get(cases, 0)));
    lm_error err;
    lm_report_free(verify_one(one, LM_ERR_SCHEMA, &err));
    cr_assert(strstr(err.message, "repeats") != NULL, "%s", err.message);

    json_array_remove(cases, 1);
    json_object_del(json_array_get(cases, 0), "seed");
    lm_report_free(verify_one(one, LM_ERR_SCHEMA, &err));
    cr_assert(strstr(err.message, "seed") != NULL, "%s", err.message);
    json_decref(one);
    json_decref(root);
}

Test(kcontract, registry_finds_kernels_only_by_exact_name)
{
    cr_assert_not_null(lm_registry_find("gemv_rowdot", NULL));
    cr_assert_null(lm_registry_find("gemv", NULL));
    cr_assert_null(lm_registry_find("gemv_rowdot ", NULL));
}

/* ---- the case's memory budget (lm_kcase_reserve, lm_kcase_alloc) --------------------- */

static json_t *case_json(const char *text)
{
    json_error_t error;
    json_t *json = json_loads(text, 0, &error);
    cr_assert_not_null(json, "%s", error.text);
    return json;
}

Test(kcase_budget, nothing_is_handed_out_before_a_reservation_nor_past_it)
{
    json_t *json = case_json("{\"id\": \"b\", \"kernel\": \"gemv_rowdot\", \"dtype\": \"f64\", "
                             "\"seed\": 1, \"shape\": {\"n\": 4, \"d\": 2}}");
    lm_kcase kcase;
    lm_error err;
    cr_assert_eq(lm_kcase_open(&kcase, json, 0, &err), LM_OK, "%s", err.message);
    cr_assert_eq(kcase.limit, LM_CASE_MAX_BYTES);
    cr_assert_null(lm_kcase_alloc(&kcase, 1, 8), "allocated without a reservation");
    cr_assert_eq(kcase.overdrawn, 8);
    lm_kcase_release(&kcase);
    cr_assert_eq(kcase.overdrawn, 0);

    lm_budget budget = lm_kcase_budget(&kcase);
    lm_budget_add(&budget, 10, sizeof(double));
    cr_assert_eq(lm_kcase_reserve(&kcase, &budget, &err), LM_OK, "%s", err.message);
    cr_assert_not_null(lm_kcase_alloc(&kcase, 6, sizeof(double)));
    cr_assert_not_null(lm_kcase_alloc(&kcase, 4, sizeof(double)));
    cr_assert_null(lm_kcase_alloc(&kcase, 1, 1), "handed out past the 80 bytes reserved");
    cr_assert_eq(kcase.used, 80);
    cr_assert_eq(kcase.overdrawn, 1);
    lm_kcase_release(&kcase);
    json_decref(json);
}

Test(kcase_budget, a_shape_past_the_limit_is_refused_naming_shape_and_limit)
{
    json_t *json = case_json("{\"id\": \"big\", \"kernel\": \"gemv_rowdot\", \"dtype\": \"f64\", "
                             "\"seed\": 1, \"shape\": {\"n\": 65536, \"d\": 4096}}");
    lm_kcase kcase;
    lm_error err;
    cr_assert_eq(lm_kcase_open(&kcase, json, 0, &err), LM_OK, "%s", err.message);
    lm_budget budget = lm_kcase_budget(&kcase);
    lm_budget_add(&budget, LM_PRODUCT(65536, 4096), LM_KCASE_VALUE_BYTES); /* 3 GiB */
    cr_assert_eq(lm_kcase_reserve(&kcase, &budget, &err), LM_ERR_SCHEMA);
    cr_assert_str_eq(err.message, "case big: shape {n 65536, d 4096} needs 3 GiB (all its "
                                  "buffers), more than the 1 GiB limit of a contract case");
    cr_assert_eq(kcase.reserved, 0);
    /* a product that does not fit a size_t saturates, and no budget accepts it */
    budget = lm_kcase_budget(&kcase);
    lm_budget_add(&budget, LM_PRODUCT((size_t)1 << 22, (size_t)1 << 21, (size_t)1 << 21), 12);
    cr_assert_eq(lm_kcase_reserve(&kcase, &budget, &err), LM_ERR_SCHEMA);
    cr_assert(strstr(err.message, "needs more bytes than a size_t holds") != NULL, "%s",
              err.message);
    lm_kcase_release(&kcase);
    json_decref(json);
}

Test(kcase_budget, each_runner_reserves_enough_for_every_contract_case)
{
    /* lm_kcase_run refuses a runner that allocates past its reservation; every case of
     * the contract, on the reference and on every path of this machine, stays within */
    json_t *root = load_contract();
    json_t *cases = json_object_get(root, "cases");
    for (size_t i = 0; i < json_array_size(cases); i++) {
        lm_kcase kcase;
        lm_kout out;
        lm_error err;
        cr_assert_eq(lm_kcase_open(&kcase, json_array_get(cases, i), i, &err), LM_OK);
        for (int isa = -1; isa < LM_ISA_COUNT; isa++) {
            if (isa >= 0 && (strcmp(kcase.dtype, "f64") == 0 || !lm_isa_available((lm_isa)isa) ||
                             lm_ops_for((lm_isa)isa) == NULL))
                continue;
            lm_kcase_run(&kcase, isa < 0 ? NULL : lm_ops_for((lm_isa)isa), &out, &err);
            cr_assert_eq(kcase.overdrawn, 0, "case %s: the runner allocated past its "
                         "reservation (%zu of %zu bytes used)", kcase.id, kcase.used,
                         kcase.reserved);
            lm_kcase_release(&kcase);
        }
    }
    json_decref(root);
}

Test(kcase_budget, a_probe_checks_fields_shape_and_budget_without_allocating)
{
    const char *const texts[] = {
        /* fits: the probe reaches the reservation */
        "{\"id\": \"ok\", \"kernel\": \"attention_prefill\", \"dtype\": \"f32\", \"seed\": 1, "
        "\"shape\": {\"n\": 8, \"heads\": 4, \"kv_heads\": 2, \"head_dim\": 16}}",
        /* the kernel's own rule: heads a multiple of kv_heads */
        "{\"id\": \"gqa\", \"kernel\": \"attention_prefill\", \"dtype\": \"f32\", \"seed\": 1, "
        "\"shape\": {\"n\": 8, \"heads\": 6, \"kv_heads\": 4, \"head_dim\": 16}}",
        /* past the budget: 2^22 * 2^21 * 2^21 wraps 64 bits */
        "{\"id\": \"wrap\", \"kernel\": \"conv_causal\", \"dtype\": \"f32\", \"seed\": 1, "
        "\"shape\": {\"batch\": 4194304, \"length\": 2097152, \"channels\": 2097152, "
        "\"width\": 4}}",
        /* a field the runner refuses */
        "{\"id\": \"opt\", \"kernel\": \"conv_causal\", \"dtype\": \"f32\", \"seed\": 1, "
        "\"shape\": {\"batch\": 1, \"length\": 8, \"channels\": 8, \"width\": 65}}",
    };
    const lm_status want[] = {LM_OK, LM_ERR_SHAPE, LM_ERR_SCHEMA, LM_ERR_SCHEMA};
    const char *const says[] = {NULL, "heads (6) must be a multiple of kv_heads (4)",
                                "case wrap: shape {batch 4194304, length 2097152, channels "
                                "2097152, width 4} needs more bytes than a size_t holds",
                                "case opt: shape.width must be at most 64, got 65"};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        json_t *json = case_json(texts[i]);
        lm_kcase kcase;
        lm_error err;
        cr_assert_eq(lm_kcase_open(&kcase, json, 0, &err), LM_OK, "%s", err.message);
        lm_status status = lm_kcase_probe(&kcase, &err);
        cr_assert_eq(status, want[i], "case %zu: %s: %s", i, lm_status_name(status), err.message);
        if (says[i] != NULL)
            cr_assert(strstr(err.message, says[i]) != NULL, "%s", err.message);
        cr_assert_eq(kcase.scratch_count, 0, "the probe allocated");
        cr_assert(!kcase.probing && kcase.reserved == 0);
        /* the same case still runs as before once probed */
        lm_kout out;
        if (i == 0)
            cr_assert_eq(lm_kcase_run(&kcase, lm_ops_for(LM_ISA_SCALAR), &out, &err), LM_OK, "%s",
                         err.message);
        lm_kcase_release(&kcase);
        json_decref(json);
    }
}

Test(kcontract, a_shape_the_kernel_refuses_stops_the_load_before_any_case_runs)
{
    json_t *root = load_contract();
    json_t *cases = json_object_get(root, "cases");
    json_t *good = json_deep_copy(find_case(root, "gemv_rowdot.f32.n7_d37"));
    json_t *bad = NULL;
    for (size_t i = 0; i < json_array_size(cases) && bad == NULL; i++) {
        json_t *c = json_array_get(cases, i);
        if (strcmp(json_string_value(json_object_get(c, "kernel")), "attention_decode") == 0 &&
            json_object_get(json_object_get(c, "expected"), "status") == NULL)
            bad = json_deep_copy(c);
    }
    cr_assert_not_null(bad);
    json_object_set_new(bad, "id", json_string("gqa"));
    json_object_set_new(json_object_get(bad, "shape"), "heads", json_integer(6));
    json_object_set_new(json_object_get(bad, "shape"), "kv_heads", json_integer(4));
    json_array_clear(cases);
    json_array_append_new(cases, good);
    json_array_append_new(cases, bad);
    lm_error err;
    lm_report *report = verify_one(root, LM_ERR_SCHEMA, &err);
    cr_assert_str_eq(err.message, "case gqa: shape.heads, shape.kv_heads: the kernel refuses "
                                  "this shape (heads (6) must be a multiple of kv_heads (4)); "
                                  "a case that expects values needs a shape the kernel accepts "
                                  "(a rejection test says expected.status)");
    cr_assert_eq(lm_report_passed(report) + lm_report_failed(report), 0,
                 "the first case ran before the load was refused");
    lm_report_free(report);
    json_decref(root);
}
