/* A child process with a pipe and a deadline (isolate.h). */
#include "isolate.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static _Noreturn void child_main(lm_child_fn *fn, void *context, int fd)
{
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    signal(SIGPIPE, SIG_DFL);
    _exit(fn(context, fd));
}

/* Appends what is ready on fd; false at end of file (or a read error). */
static bool read_some(int fd, lm_child_result *result, size_t *capacity, bool *nomem)
{
    if (*capacity - result->size < 65536) {
        size_t grown = *capacity ? 2 * *capacity : 131072;
        unsigned char *bytes = realloc(result->bytes, grown);
        if (bytes == NULL) {
            *nomem = true;
            return false;
        }
        result->bytes = bytes;
        *capacity = grown;
    }
    ssize_t got = read(fd, result->bytes + result->size, *capacity - result->size);
    if (got < 0 && errno == EINTR)
        return true;
    if (got <= 0)
        return false;
    result->size += (size_t)got;
    return true;
}

/* Reaps the child, killing it when it outlives the deadline. */
static void reap(pid_t pid, double deadline, lm_child_result *result)
{
    int status = 0;
    bool killed = false;
    while (waitpid(pid, &status, killed ? 0 : WNOHANG) == 0) {
        if (now_s() >= deadline) {
            kill(pid, SIGKILL);
            killed = true;
            result->end = LM_CHILD_TIMED_OUT;
            continue;
        }
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
    if (result->end == LM_CHILD_TIMED_OUT)
        return;
    if (WIFSIGNALED(status)) {
        result->end = LM_CHILD_SIGNALED;
        result->signal = WTERMSIG(status);
    } else {
        result->end = LM_CHILD_EXITED;
        result->code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
}

lm_status lm_child_run(lm_child_fn *fn, void *context, double timeout_s,
                       lm_child_result *result, lm_error *err)
{
    *result = (lm_child_result){.end = LM_CHILD_EXITED};
    int fds[2];
    if (pipe(fds) != 0)
        return lm_fail(err, LM_ERR_IO, "cannot make a pipe: %s", strerror(errno));
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]), close(fds[1]);
        return lm_fail(err, LM_ERR_IO, "cannot start a child process: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        child_main(fn, context, fds[1]);
    }
    close(fds[1]);
    const double deadline = now_s() + timeout_s;
    size_t capacity = 0;
    bool nomem = false, open = true;
    while (open) {
        double left = deadline - now_s();
        if (left <= 0.0)
            break;
        struct pollfd wait_for = {fds[0], POLLIN, 0};
        int ready = poll(&wait_for, 1, (int)(left * 1000.0) + 1);
        if (ready < 0 && errno != EINTR)
            break;
        if (ready > 0)
            open = read_some(fds[0], result, &capacity, &nomem);
    }
    close(fds[0]);
    reap(pid, deadline, result);
    if (nomem) {
        free(result->bytes);
        *result = (lm_child_result){0};
        return lm_fail(err, LM_ERR_NOMEM, "out of memory reading a child's result");
    }
    return LM_OK;
}

const char *lm_signal_name(int signal, char *buffer, size_t size)
{
    static const struct {
        int number;
        const char *name;
    } names[] = {{SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
                 {SIGILL, "SIGILL"},   {SIGABRT, "SIGABRT"}, {SIGKILL, "SIGKILL"},
                 {SIGTERM, "SIGTERM"}, {SIGTRAP, "SIGTRAP"}, {SIGSYS, "SIGSYS"},
                 {SIGPIPE, "SIGPIPE"}, {SIGXCPU, "SIGXCPU"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].number == signal)
            return names[i].name;
    snprintf(buffer, size, "signal %d", signal);
    return buffer;
}
