/*
 * atomic_internal.h — atomic files and directories: the one way quiver puts
 * a file or a directory in place (core layer; internal, not installed).
 * Used by every writer: the IPC writer (ipc/writer.c), the integration JSON
 * writer (ipc/json_write.c), save_to_disk's JSON files and directories
 * (dataset/dataset_save.c).
 *
 * A file is written to a temporary beside its target,
 *   .<name>.tmp-quiver-<pid>-<start>-<rand>
 * (hidden, not ending in ".arrow", so no loader takes it for data; <pid> and
 * <start> — the writer's pid and its start time in clock ticks since boot,
 * from /proc — identify the writer even after its pid is reused; <rand> is 6
 * random characters), then fsync'ed, renamed over the target, and the
 * directory fsync'ed. A directory is built the same way in a sibling
 * temporary directory of the same shape of name and put in place with one
 * rename: renameat2(RENAME_EXCHANGE) over an existing target (the old tree,
 * then at the temporary name, is removed afterwards), plain rename(2) for a
 * new one. A crash leaves the old target or the new one, and at most
 * temporaries, which qv_atomic_reclaim removes once their writer is gone.
 *
 * When the file system refuses RENAME_EXCHANGE (EINVAL, ENOSYS, ENOTSUP),
 * the fallback moves the old tree aside to `.<name>.old-quiver-<pid>-...`,
 * renames the new tree in, then removes the old one: a crash between the
 * two renames leaves no target but both complete trees, and reclaiming
 * renames the old tree back (the state before the write), never deletes it.
 *
 * Test hook (documented, read once per process): QUIVER_TEST_KILL_AT=N makes
 * the process SIGKILL itself at its Nth crash point (every write, fsync and
 * rename step of these helpers and of the IPC writer, counted from 1);
 * QUIVER_TEST_KILL_TRACE=1 prints "quiver-crash-point N WHAT" to stderr at
 * each one (to count them). QUIVER_TEST_NO_EXCHANGE=1 takes the fallback
 * path as if RENAME_EXCHANGE were not supported.
 */
#ifndef QUIVER_CORE_ATOMIC_INTERNAL_H
#define QUIVER_CORE_ATOMIC_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "quiver/core.h"

/** A crash point of the test hook above (`what` names the step). Costs one
 *  predictable branch when the hook is off. */
void qv_crash_point(const char *what);

/* ----------------------------------------------------------------- files */

typedef struct qv_atomic_file qv_atomic_file;

/**
 * Create the temporary for `path` (0666 less the umask, or the mode of the
 * file it will replace) after reclaiming the dead writers' temporaries in
 * its directory. On success *out owns the temporary until
 * qv_atomic_file_commit or qv_atomic_file_abort (exactly one must be
 * called). QV_EARG for an empty path or one naming a directory, QV_EIO
 * when the temporary cannot be created.
 */
qv_status qv_atomic_file_open(const char *path, qv_atomic_file **out, qv_error *err);

/** The temporary's descriptor (owned by the handle: do not close it). */
int qv_atomic_file_fd(const qv_atomic_file *f);
/** The temporary's path and the target's (owned by the handle). */
const char *qv_atomic_file_tmp(const qv_atomic_file *f);
const char *qv_atomic_file_target(const qv_atomic_file *f);

/** Write all of data[0..n) at the current position (retries partial writes
 *  and EINTR; one crash point per write call). */
qv_status qv_atomic_file_write(qv_atomic_file *f, const void *data, int64_t n, qv_error *err);

/**
 * fsync, close, rename over the target, fsync the directory. Frees the
 * handle in every case; on failure the temporary is removed and the target
 * is untouched (unless the failure is the directory fsync after the rename:
 * then the new file is in place but may not survive a power loss).
 */
qv_status qv_atomic_file_commit(qv_atomic_file *f, qv_error *err);

/** Close and remove the temporary, free the handle. NULL-safe. */
void qv_atomic_file_abort(qv_atomic_file *f);

/** Open + write + commit of `n` bytes (`data` is not retained). */
qv_status qv_atomic_write_file(const char *path, const void *data, int64_t n, qv_error *err);

/* ----------------------------------------------------------- directories */

typedef struct qv_atomic_dir qv_atomic_dir;

/**
 * Create an empty temporary directory beside `path` (the final directory;
 * its parent must exist), after reclaiming the dead writers' temporaries
 * in the parent. The caller fills qv_atomic_dir_tmp(d), then calls exactly
 * one of qv_atomic_dir_commit / qv_atomic_dir_abort. `path` must not be an
 * existing non-directory (QV_EARG).
 */
qv_status qv_atomic_dir_open(const char *path, qv_atomic_dir **out, qv_error *err);

/** The temporary directory's path (owned by the handle). */
const char *qv_atomic_dir_tmp(const qv_atomic_dir *d);

/**
 * fsync every file and directory of the temporary tree, put it in place
 * (see the file comment), fsync the parent, remove the old tree (a tree
 * that cannot be removed is left for a later qv_atomic_reclaim, not an
 * error). Frees the handle in every case; on failure before the rename the
 * temporary tree is removed and the target is untouched. *out_exchanged (may be NULL) tells
 * whether an existing target was replaced.
 */
qv_status qv_atomic_dir_commit(qv_atomic_dir *d, bool *out_exchanged, qv_error *err);

/** Remove the temporary tree, free the handle. NULL-safe. */
void qv_atomic_dir_abort(qv_atomic_dir *d);

/* ------------------------------------------------------------- helpers -- */

/** fsync a directory. */
qv_status qv_fsync_dir(const char *dir, qv_error *err);

/** pread exactly n bytes of fd at off into dst (retrying EINTR and short
 *  reads); false on an error or end of file first. */
bool qv_pread_full(int fd, void *dst, int64_t n, int64_t off);

/** rm -r `path` without following symbolic links (a link is removed, not
 *  its target). A missing path is QV_OK. Depth is bounded (QV_EIO past
 *  64 levels). */
qv_status qv_remove_tree(const char *path, qv_error *err);

/**
 * Whether `name` (a file name, no directory) is a quiver temporary of the
 * shape above; when it is, *pid, *start and *old (an `.old-quiver-` tree of
 * the fallback) are filled (each may be NULL).
 */
bool qv_atomic_parse_name(const char *name, long *pid, unsigned long long *start, bool *old);

/** Whether the writer (pid, start) is gone: no such process, or the pid now
 *  belongs to a process started at another time. */
bool qv_atomic_writer_gone(long pid, unsigned long long start);

/**
 * Remove the temporaries in `dir` whose writer is gone (files and trees;
 * an `.old-quiver-` tree whose target is missing is renamed back instead).
 * Temporaries of live writers (this process included) are kept. Counts
 * what was reclaimed in *out_removed (may be NULL). A directory that cannot
 * be read is QV_EIO; entries that vanish meanwhile are skipped.
 */
qv_status qv_atomic_reclaim(const char *dir, int64_t *out_removed, qv_error *err);

#endif /* QUIVER_CORE_ATOMIC_INTERNAL_H */
