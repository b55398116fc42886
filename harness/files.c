/* Reading user files safely and writing results atomically (see files.h). */
#include "files.h"
#include "size_budget.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* ---- reading ------------------------------------------------------------------------ */

/* Refuses what is not a regular file (or, on standard input, a pipe or a file). */
static lm_status check_kind(const char *name, const struct stat *st, bool is_stdin, int fd,
                            lm_error *err)
{
    if (S_ISDIR(st->st_mode))
        return lm_fail(err, LM_ERR_IO, "%s: is a directory", name);
    if (is_stdin) {
        if (isatty(fd))
            return lm_fail(err, LM_ERR_IO, "standard input is a terminal: pipe a file into it");
        if (!S_ISREG(st->st_mode) && !S_ISFIFO(st->st_mode))
            return lm_fail(err, LM_ERR_IO, "standard input is not a pipe or a regular file");
        return LM_OK;
    }
    if (!S_ISREG(st->st_mode))
        return lm_fail(err, LM_ERR_IO, "%s: not a regular file (a %s); pipe it to '-' instead",
                       name, S_ISFIFO(st->st_mode)   ? "FIFO"
                             : S_ISCHR(st->st_mode)  ? "character device"
                             : S_ISBLK(st->st_mode)  ? "block device"
                             : S_ISSOCK(st->st_mode) ? "socket"
                                                     : "special file");
    return LM_OK;
}

static lm_status too_large(const char *name, size_t max_bytes, lm_error *err)
{
    char limit[32];
    lm_bytes_text(max_bytes, limit, sizeof limit);
    return lm_fail(err, LM_ERR_ARG, "%s: larger than the %s limit for such a file", name, limit);
}

/* Reads fd to its end into a buffer of at most max_bytes (+ a NUL). */
static lm_status read_all(int fd, const char *name, size_t max_bytes, char **bytes,
                          size_t *size, lm_error *err)
{
    size_t capacity = 1 << 16, used = 0;
    char *buffer = malloc(capacity + 1);
    for (;;) {
        if (buffer == NULL)
            return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory reading the file", name);
        if (used == capacity) {
            if (capacity > max_bytes) {
                free(buffer);
                return too_large(name, max_bytes, err);
            }
            capacity *= 2;
            char *grown = realloc(buffer, capacity + 1);
            if (grown == NULL)
                free(buffer);
            buffer = grown;
            continue;
        }
        ssize_t got = read(fd, buffer + used, capacity - used);
        if (got > 0) {
            used += (size_t)got;
            if (used > max_bytes) {
                free(buffer);
                return too_large(name, max_bytes, err);
            }
        } else if (got == 0) {
            break;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            struct pollfd wait_for = {fd, POLLIN, 0};
            (void)poll(&wait_for, 1, -1);
        } else if (errno != EINTR) {
            int code = errno;
            free(buffer);
            return lm_fail(err, LM_ERR_IO, "%s: read error: %s", name, strerror(code));
        }
    }
    buffer[used] = '\0';
    *bytes = buffer;
    *size = used;
    return LM_OK;
}

lm_status lm_read_file(const char *path, size_t max_bytes, bool allow_stdin, char **bytes,
                       size_t *size, lm_error *err)
{
    const bool is_stdin = allow_stdin && strcmp(path, "-") == 0;
    const char *name = is_stdin ? "standard input" : path;
    /* O_NONBLOCK: opening a FIFO without a writer returns at once (and is then refused) */
    int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return lm_fail(err, LM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    lm_status status = LM_OK;
    if (fstat(fd, &st) != 0)
        status = lm_fail(err, LM_ERR_IO, "%s: cannot open: %s", name, strerror(errno));
    if (status == LM_OK)
        status = check_kind(name, &st, is_stdin, fd, err);
    if (status == LM_OK && S_ISREG(st.st_mode) && (uintmax_t)st.st_size > max_bytes)
        status = too_large(name, max_bytes, err);
    if (status == LM_OK)
        status = read_all(fd, name, max_bytes, bytes, size, err);
    if (!is_stdin)
        close(fd);
    return status;
}

/* ---- atomic writing ----------------------------------------------------------------- */

/* The folder and the file name of path ("." and path when it has no '/'), malloc'd. */
static lm_status split_path(const char *path, char **folder, const char **name, lm_error *err)
{
    const char *slash = strrchr(path, '/');
    *name = slash ? slash + 1 : path;
    if (**name == '\0')
        return lm_fail(err, LM_ERR_IO, "cannot write %s: it names a folder, not a file", path);
    size_t length = slash == NULL ? 1 : slash == path ? 1 : (size_t)(slash - path);
    *folder = malloc(length + 1);
    if (*folder == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory writing %s", path);
    memcpy(*folder, slash == NULL ? "." : path, length);
    (*folder)[length] = '\0';
    return LM_OK;
}

/* The pid of a temp file name "<prefix><pid>-..." (this naming) or "<prefix><pid>" (the
 * "<name>.tmp.<pid>" of earlier versions), or 0 when `entry` is not one. */
static pid_t temp_owner(const char *entry, const char *prefix, char end)
{
    size_t length = strlen(prefix);
    if (strncmp(entry, prefix, length) != 0)
        return 0;
    char *stop;
    errno = 0;
    long pid = strtol(entry + length, &stop, 10);
    if (stop == entry + length || errno != 0 || pid <= 0 || *stop != end || (pid_t)pid != pid)
        return 0;
    return (pid_t)pid;
}

static bool process_is_gone(pid_t pid)
{
    return pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH;
}

size_t lm_atomic_remove_stale(const char *path)
{
    char *folder;
    const char *name;
    if (split_path(path, &folder, &name, NULL) != LM_OK)
        return 0;
    size_t length = strlen(name) + 16;
    char *current = malloc(length), *legacy = malloc(length);
    DIR *dir = current && legacy ? opendir(folder) : NULL;
    size_t removed = 0;
    if (dir != NULL) {
        snprintf(current, length, ".%s.tmp-", name);
        snprintf(legacy, length, "%s.tmp.", name);
        struct dirent *entry;
        while ((entry = readdir(dir)) != NULL) {
            pid_t owner = temp_owner(entry->d_name, current, '-');
            if (owner == 0)
                owner = temp_owner(entry->d_name, legacy, '\0');
            struct stat st;
            if (owner == 0 || !process_is_gone(owner) ||
                fstatat(dirfd(dir), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
                S_ISDIR(st.st_mode))
                continue;
            removed += unlinkat(dirfd(dir), entry->d_name, 0) == 0; /* a symlink itself */
        }
        closedir(dir);
    }
    free(current), free(legacy), free(folder);
    return removed;
}

static void free_names(lm_atomic_file *file)
{
    free(file->path), free(file->temp_path);
    file->path = file->temp_path = NULL;
    file->stream = NULL;
}

lm_status lm_atomic_open(lm_atomic_file *file, const char *path, lm_error *err)
{
    *file = (lm_atomic_file){0};
    char *folder;
    const char *name;
    lm_status status = split_path(path, &folder, &name, err);
    if (status != LM_OK)
        return status;
    lm_atomic_remove_stale(path);
    size_t length = strlen(folder) + strlen(name) + 48;
    file->path = malloc(strlen(path) + 1);
    file->temp_path = malloc(length);
    if (file->path == NULL || file->temp_path == NULL) {
        free(folder), free_names(file);
        return lm_fail(err, LM_ERR_NOMEM, "out of memory writing %s", path);
    }
    memcpy(file->path, path, strlen(path) + 1);
    snprintf(file->temp_path, length, "%s/.%s.tmp-%ld-XXXXXX", folder, name, (long)getpid());
    free(folder);
    int fd = mkstemp(file->temp_path); /* O_CREAT | O_EXCL, mode 0600 */
    if (fd < 0) {
        status = lm_fail(err, LM_ERR_IO, "cannot write %s: %s", path, strerror(errno));
        free_names(file);
        return status;
    }
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(fd, 0666 & ~mask); /* the mode a plain fopen would have given */
    file->stream = fdopen(fd, "w");
    if (file->stream == NULL) {
        status = lm_fail(err, LM_ERR_IO, "cannot write %s: %s", path, strerror(errno));
        close(fd);
        unlink(file->temp_path);
        free_names(file);
    }
    return status;
}

/* fsync of the folder that holds path, so the rename itself is durable. */
static void sync_folder(const char *path)
{
    char *folder;
    const char *name;
    if (split_path(path, &folder, &name, NULL) != LM_OK)
        return;
    int fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(folder);
}

lm_status lm_atomic_commit(lm_atomic_file *file, lm_error *err)
{
    if (file->stream == NULL)
        return lm_fail(err, LM_ERR_IO, "cannot write %s: not open",
                       file->path ? file->path : "(unnamed)");
    int code = 0;
    if (fflush(file->stream) != 0 || ferror(file->stream))
        code = errno ? errno : EIO;
    else if (fsync(fileno(file->stream)) != 0)
        code = errno;
    if (fclose(file->stream) != 0 && code == 0)
        code = errno ? errno : EIO;
    file->stream = NULL;
    if (code == 0 && rename(file->temp_path, file->path) != 0)
        code = errno;
    lm_status status = LM_OK;
    if (code != 0) {
        unlink(file->temp_path);
        status = lm_fail(err, LM_ERR_IO, "cannot write %s: %s", file->path, strerror(code));
    } else {
        sync_folder(file->path);
    }
    free_names(file);
    return status;
}

void lm_atomic_abort(lm_atomic_file *file)
{
    if (file->stream != NULL)
        fclose(file->stream);
    if (file->temp_path != NULL)
        unlink(file->temp_path);
    free_names(file);
}
