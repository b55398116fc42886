/* The kernel contract checked on a plugin's operators (contract.h: lm_verify_kernels_plugin).
 *
 * Every case whose operator the plugin provides (plugin.h: lm_plugin_op_of_case) runs in a
 * child process (isolate.h) on the plugin's table, its buffers between guard bytes
 * (kernel_cases.h: guarded); the child sends back the run's status, message, damaged guard
 * bytes and output through a pipe, and the parent judges the output by the same statistics
 * and tolerances as longmix's own (kernel_expect.h). Checks are named
 * plugin:NAME/op / <case id>/<statistic>; a case whose child was killed by a signal or ran
 * out of time is a failed <case id>/run naming the signal; an operator of the ABI with cases
 * in the file that the plugin does not provide is one NOT PROVIDED record. */
#include "contract.h"
#include "isolate.h"
#include "kernel_expect.h"
#include "plugin.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What the child writes first; `count` float64 outputs follow. */
typedef struct child_header {
    int32_t status;
    uint32_t pad;
    uint64_t damage; /* guard bytes changed */
    uint64_t count;
    char message[LM_ERROR_MESSAGE_SIZE];
} child_header;

typedef struct child_task {
    const json_t *json;
    size_t index;
    const lm_plugin *plugin;
} child_task;

static bool write_all(int fd, const void *data, size_t size)
{
    const char *p = data;
    while (size > 0) {
        ssize_t wrote = write(fd, p, size);
        if (wrote < 0 && errno == EINTR)
            continue;
        if (wrote <= 0)
            return false;
        p += wrote;
        size -= (size_t)wrote;
    }
    return true;
}

/* The child: runs the case on the plugin's table and writes header and output. */
static int run_in_child(void *context, int fd)
{
    const child_task *task = context;
    lm_kcase kcase;
    lm_error err;
    lm_error_clear(&err);
    child_header header = {0};
    lm_kout out = {NULL, 0};
    lm_status status = lm_kcase_open(&kcase, task->json, task->index, &err);
    if (status == LM_OK) {
        kcase.guarded = true;
        status = lm_kcase_run(&kcase, &task->plugin->table, &out, &err);
        header.damage = lm_kcase_guard_damage(&kcase);
    }
    header.status = (int32_t)status;
    header.count = status == LM_OK ? out.count : 0;
    snprintf(header.message, sizeof header.message, "%s", err.message);
    bool ok = write_all(fd, &header, sizeof header) &&
              (header.count == 0 || write_all(fd, out.values, out.count * sizeof(double)));
    lm_kcase_release(&kcase);
    return ok ? 0 : 3;
}

/* "killed by signal SIGSEGV", "timed out after 2 s (killed with SIGKILL)", ... */
static bool child_failed(const lm_child_result *result, double timeout_s, char *text,
                         size_t size)
{
    char buffer[32];
    if (result->end == LM_CHILD_SIGNALED) {
        snprintf(text, size, "killed by signal %s (%s)",
                 lm_signal_name(result->signal, buffer, sizeof buffer), strsignal(result->signal));
        return true;
    }
    if (result->end == LM_CHILD_TIMED_OUT) {
        snprintf(text, size, "timed out after %g s (killed with SIGKILL; --timeout)", timeout_s);
        return true;
    }
    if (result->code != 0 || result->size < sizeof(child_header)) {
        snprintf(text, size, "the child exited with status %d before reporting a result",
                 result->code);
        return true;
    }
    return false;
}

/* Judges one case's child result. */
static void judge(lm_report *report, const char *section, const char *id, const lm_kexpect *e,
                  const lm_child_result *result, double timeout_s)
{
    char name[LM_KEXPECT_NAME_TEXT], text[LM_ERROR_MESSAGE_SIZE + 64];
    snprintf(name, sizeof name, "%s/run", id);
    if (child_failed(result, timeout_s, text, sizeof text)) {
        lm_check_true(report, section, name, false, "the kernel returns", text);
        return;
    }
    child_header header;
    memcpy(&header, result->bytes, sizeof header);
    header.message[sizeof header.message - 1] = '\0';
    const size_t count = (size_t)header.count;
    if (count > (result->size - sizeof header) / sizeof(double)) {
        lm_check_true(report, section, name, false, "the kernel returns",
                      "the child's result was cut short");
        return;
    }
    lm_error message;
    lm_fail(&message, (lm_status)header.status, "%s", header.message);
    if (e->rejects) {
        snprintf(name, sizeof name, "%s/rejects", id);
        lm_check_rejects(report, section, name, e->status, (lm_status)header.status, &message,
                         e->mention);
    } else if (header.status != LM_OK) {
        snprintf(text, sizeof text, "%s error: %s", lm_status_name((lm_status)header.status),
                 header.message);
        lm_check_true(report, section, name, false, "the kernel runs", text);
    } else {
        double *values = malloc(count ? count * sizeof(double) : 1);
        if (values != NULL)
            memcpy(values, result->bytes + sizeof header, count * sizeof(double));
        lm_kout out = {values, values != NULL ? count : 0};
        lm_kexpect_check_output(report, section, id, &out, e);
        free(values);
    }
    snprintf(name, sizeof name, "%s/bounds", id);
    snprintf(text, sizeof text, "%llu guard bytes changed around the case's buffers",
             (unsigned long long)header.damage);
    lm_check_true(report, section, name, header.damage == 0,
                  "nothing written outside the case's buffers", text);
}

static void section_of(const lm_plugin *plugin, size_t op, char *out, size_t size)
{
    snprintf(out, size, "plugin:%s/%s", plugin->name, lm_plugin_op_name(op));
}

/* Runs one case of the plugin's operator `op` in a child and records its checks. */
static lm_status run_case(const lm_plugin *plugin, size_t op, const json_t *json, size_t index,
                          const lm_kexpect *e, const char *id, double timeout_s,
                          lm_report *report, lm_error *err)
{
    child_task task = {json, index, plugin};
    lm_child_result result;
    lm_status status = lm_child_run(run_in_child, &task, timeout_s, &result, err);
    if (status != LM_OK)
        return status;
    char section[LM_KEXPECT_PREFIX_TEXT];
    section_of(plugin, op, section, sizeof section);
    judge(report, section, id, e, &result, timeout_s);
    free(result.bytes);
    return LM_OK;
}

/* One NOT PROVIDED record per operator of the ABI the file has cases of and the plugin
 * leaves out. */
static void list_not_provided(const lm_plugin *plugin, const lm_contract *contract,
                              const size_t *cases_of_op, lm_report *report)
{
    for (size_t op = 0; op < lm_plugin_op_count(); op++) {
        if (cases_of_op[op] == 0 || lm_plugin_provides(plugin, op))
            continue;
        char section[LM_KEXPECT_PREFIX_TEXT], why[256];
        section_of(plugin, op, section, sizeof section);
        snprintf(why, sizeof why, "%zu case%s of %s not run", cases_of_op[op],
                 cases_of_op[op] == 1 ? "" : "s", contract->path);
        lm_report_not_provided(report, section, "not provided", why);
    }
}

lm_status lm_verify_kernels_plugin(const lm_contract *contract, const lm_plugin *plugin,
                                   double timeout_s, lm_report *report, lm_error *err)
{
    const json_t *cases;
    lm_status status = lm_kernels_cases(contract, &cases, err);
    if (status != LM_OK)
        return status;
    size_t cases_of_op[LM_PLUGIN_OP_MAX] = {0};
    for (size_t i = 0; i < json_array_size(cases); i++) {
        lm_kcase kcase;
        lm_kexpect e;
        size_t op;
        if ((status = lm_kcase_open_expecting(cases, i, &kcase, &e, err)) != LM_OK)
            return status;
        if (!lm_plugin_op_of_case(&kcase, &op))
            continue;
        cases_of_op[op]++;
        if (lm_plugin_provides(plugin, op) &&
            (status = run_case(plugin, op, kcase.json, i, &e, kcase.id, timeout_s, report,
                               err)) != LM_OK)
            return status;
    }
    list_not_provided(plugin, contract, cases_of_op, report);
    return LM_OK;
}
