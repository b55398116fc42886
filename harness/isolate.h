/* Running untrusted code in a child process with a time limit: the child writes its result
 * to a pipe, the parent collects it, and a crash, a hang or an early exit of the child is a
 * result the caller reports, never the end of the parent. */
#ifndef LONGMIX_ISOLATE_H
#define LONGMIX_ISOLATE_H

#include "longmix.h"

#include <stddef.h>

typedef enum lm_child_end {
    LM_CHILD_EXITED,    /* exited on its own with `code` */
    LM_CHILD_SIGNALED,  /* killed by `signal` */
    LM_CHILD_TIMED_OUT, /* still running after the time limit: killed with SIGKILL */
} lm_child_end;

typedef struct lm_child_result {
    lm_child_end end;
    int code;             /* exit status (LM_CHILD_EXITED) */
    int signal;           /* LM_CHILD_SIGNALED */
    unsigned char *bytes; /* everything the child wrote to its pipe (free with free) */
    size_t size;
} lm_child_result;

/* What runs in the child: writes its result to `fd` and returns its exit status. */
typedef int lm_child_fn(void *context, int fd);

/* Forks; the child (core dumps off) runs fn(context, fd) and exits with its return value,
 * without running the parent's atexit handlers or flushing its buffers. The parent reads
 * the pipe until the child closes it, for at most `timeout_s` seconds in all, then reaps it.
 * LM_ERR_IO when no pipe or process could be made, LM_ERR_NOMEM; *result otherwise. */
lm_status lm_child_run(lm_child_fn *fn, void *context, double timeout_s,
                       lm_child_result *result, lm_error *err);

/* "SIGSEGV" for the usual fatal signals, else "signal N" (text valid until the next call
 * with the same buffer). */
const char *lm_signal_name(int signal, char *buffer, size_t size);

#endif
