/* Files the harness reads from users and writes for them.
 *
 * Reading: only a regular file (or standard input given as "-", a pipe or a redirected
 * file), opened without blocking (a FIFO with no writer is refused, not waited on), and at
 * most a stated number of bytes, so /dev/zero or a huge file cannot exhaust memory.
 *
 * Writing: atomically. A temp file is created in the destination's folder with mkstemp
 * (O_CREAT|O_EXCL: a planted file or symlink is never followed or overwritten), written,
 * flushed, fsync'd and renamed over the destination, so a reader or an interrupted run
 * sees the old file or the new one, never a partial one. Temp files are named
 * ".<name>.tmp-<pid>-XXXXXX"; opening a new one removes those of processes that no longer
 * run (a crashed or killed earlier run). Library code: errors are values. */
#ifndef LONGMIX_FILES_H
#define LONGMIX_FILES_H

#include "longmix.h"

#include <stdio.h>

/* Reads the whole file at `path` ("-" for standard input when allow_stdin) into a
 * malloc'd buffer with a NUL after the last byte (*size excludes it). LM_ERR_IO naming the
 * path for: a missing or unreadable file, a directory ("is a directory"), a FIFO, device
 * or socket ("not a regular file"), a terminal on standard input, read errors; LM_ERR_ARG
 * when the file holds more than max_bytes bytes ("PATH: larger than the 16 MiB limit for
 * such a file"). */
lm_status lm_read_file(const char *path, size_t max_bytes, bool allow_stdin, char **bytes,
                       size_t *size, lm_error *err);

/* A file being written atomically. */
typedef struct lm_atomic_file {
    FILE *stream;     /* write here */
    char *path;       /* the destination */
    char *temp_path;  /* the temp file beside it */
} lm_atomic_file;

/* Creates the temp file for `path` (removing stale temp files of dead runs first).
 * LM_ERR_IO naming the path when the folder is missing or not writable. */
lm_status lm_atomic_open(lm_atomic_file *file, const char *path, lm_error *err);
/* Flushes, fsyncs and closes the temp file and renames it over the destination (then
 * fsyncs the folder). On failure the temp file is removed, the destination is untouched,
 * and LM_ERR_IO names the path. The file is closed either way. */
lm_status lm_atomic_commit(lm_atomic_file *file, lm_error *err);
/* Closes and removes the temp file; the destination is untouched. */
void lm_atomic_abort(lm_atomic_file *file);

/* Removes the temp files of `path` left by processes that no longer run; returns how many. */
size_t lm_atomic_remove_stale(const char *path);

#endif
