/*
 * quiver/guard.h — recovery points around reads of memory-mapped files.
 * Part of the core layer.
 *
 * A file mapped by quiver (qv_buffer_map_file, so every table, reader and
 * dataset opened from a path) may shrink while it is open: another process
 * truncates or rewrites it in place. Reading a page of the mapping that now
 * lies past the end of the file raises SIGBUS, which kills a process by
 * default. quiver's own reads of mapped bytes (decoding and validating
 * record batches, gathers, concatenation, row formatting, sort keys,
 * filters, the row encoder) run under a recovery point instead and fail
 * with QV_ECHANGED: "'x.arrow' shrank from N to M bytes while open". The
 * objects involved stay usable: other rows, other files keep reading.
 *
 * How it works: one SIGBUS handler, installed once (when the first file is
 * mapped, or by the first guarded call) with SA_SIGINFO | SA_NODEFER |
 * SA_ONSTACK. On a SIGBUS whose faulting address lies inside a mapping
 * quiver made, raised while the faulting thread is inside qv_guard_run, it
 * jumps back to that call, which returns QV_ECHANGED. Every other SIGBUS
 * (another library's mapping, a thread outside a guard, a signal sent with
 * kill) goes to the handler that was installed before quiver's — called as
 * it asked to be (SA_SIGINFO or not, its mask) — or, if that was the
 * default action, kills the process as it would have without quiver.
 * SIGSEGV is not handled: a segmentation fault is a bug, never a file
 * change. A handler installed after quiver's replaces it: it should chain
 * to the previous one (as Python's faulthandler does) for recovery to work.
 *
 * Cost: a guarded call costs a sigsetjmp without saving the signal mask
 * (no system call) and two thread-local stores; guards sit at API
 * boundaries (one per batch decode, gather, format call, sort), never per
 * element.
 *
 * What is not covered: memory handed out zero-copy (qv_array buffers read
 * by the caller directly, Arrow C Data Interface exports, Python buffers)
 * is read outside quiver's guard. Reading it after the file shrank raises
 * SIGBUS in the reader, as with pyarrow. To be safe either copy the data
 * first (gathers, qv_array_concat and the writers produce heap memory) or
 * never truncate or rewrite a file in place while it is open — replace it
 * with rename(2) instead, which leaves the old mapping intact (quiver's
 * writers all do). qv_guard_check_array tells whether an array's mapped
 * bytes are all still there.
 */
#ifndef QUIVER_GUARD_H
#define QUIVER_GUARD_H

#include "quiver/array.h"
#include "quiver/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A body run under a recovery point. Returns its status; fills err. */
typedef qv_status (*qv_guard_fn)(void *ctx, qv_error *err);

/**
 * Run fn(ctx, err) under a recovery point on the calling thread. Returns
 * fn's status, or QV_ECHANGED (message naming the file, its size when
 * mapped and its size now) when fn read a page of a quiver mapping that
 * lies past the file's current end. Guards nest: the innermost active one
 * recovers. After a recovery fn has not returned, so whatever fn allocated
 * must be reachable from `ctx` (the caller frees it); fn must not hold a
 * lock across reads of mapped memory. A call on a thread without a guard
 * is not affected by guards on other threads. Thread-safe.
 */
QV_API qv_status qv_guard_run(qv_guard_fn fn, void *ctx, qv_error *err) QV_NODISCARD;

/**
 * Check that every byte of `buf` is still backed by its file when buf is
 * (a view of) a file mapping: touches the last byte (the last page is the
 * first to go when a file shrinks) under a guard. QV_OK for heap memory
 * and for empty buffers; QV_ECHANGED as qv_guard_run otherwise. Borrowed
 * argument; nothing to release. A file may of course still shrink after
 * the check returns.
 */
QV_API qv_status qv_guard_check_buffer(const qv_buffer *buf, qv_error *err) QV_NODISCARD;

/** qv_guard_check_buffer over every buffer of `a`, its children and its
 *  dictionary (recursively), in one load per file mapping: the highest
 *  byte the array uses of each (a file loses bytes only at its end, so the
 *  bytes below it are there when it is). Borrowed. */
QV_API qv_status qv_guard_check_array(const qv_array *a, qv_error *err) QV_NODISCARD;

/** The addresses qv_guard_check_array(a) loads (one per file mapping
 *  behind `a`: the highest byte it uses of each), for a caller that checks
 *  the same array many times (a row at a time): up to `max` of them into
 *  out[0..max). Returns how many (0: nothing mapped), or -1 when there are
 *  more than `max` or `a` is not readable (use qv_guard_check_array then).
 *  The addresses stay valid while `a` lives; nothing to release. */
QV_API int qv_guard_array_points(const qv_array *a, const void **out, int max);

/** Load each of points[0..n) (from qv_guard_array_points) under a guard:
 *  QV_OK, or QV_ECHANGED as qv_guard_run when one lies past its file's
 *  end now — the answer qv_guard_check_array gives for the array. */
QV_API qv_status qv_guard_check_points(const void *const *points, int n,
                                       qv_error *err) QV_NODISCARD;

/** Install the SIGBUS handler now (idempotent, thread-safe). quiver calls
 *  it when it maps its first file; call it yourself only to fix the order
 *  against another handler installed later. */
QV_API void qv_guard_install(void);

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_GUARD_H */
