/*
 * spill_internal.h — what group-by (groupby_spill.c) and the grace hash
 * join (join_spill.c) share when they go past their memory budget: the
 * default budget, the private directory their partition files live in, the
 * partition a row's hash picks, the counting sort of a batch's rows by
 * partition, and the partition files themselves (temporary Arrow IPC
 * streams). Compute layer, private to src/compute; implemented in spill.c.
 */
#ifndef QV_SPILL_INTERNAL_H
#define QV_SPILL_INTERNAL_H

#include <stdint.h>

#include "core/atomic_internal.h"
#include "quiver/core.h"
#include "quiver/writer.h"

/** The hash bits a spilling operator partitions on start here: bits 0..6
 *  are the grouper's tags and the top bits its blocks, so a partition's
 *  rows still spread over the in-memory table that processes it. */
#define QV_SPILL_HASH_SHIFT 8

/** The partition (0..parts-1, parts a power of two <= 256) of a row whose
 *  64-bit key hash is h, at recursion level `depth` (each level takes the
 *  next 8 bits). */
static inline uint8_t qv_spill_partition_of(uint64_t h, int parts, int depth) {
  return (uint8_t)((h >> (QV_SPILL_HASH_SHIFT + 8 * depth)) & (uint64_t)(parts - 1));
}

/** Counting sort of n rows by partition: start (parts + 1 entries, the
 *  caller's) gets start[p] = the first slot of partition p and
 *  start[parts] = n. The caller scatters with a copy of start. */
void qv_spill_bucket_starts(const uint8_t *part, int64_t n, int parts, int64_t *start);

/** One partition file being written: an Arrow IPC stream of struct batches
 *  in a spilling run's private directory, written through a descriptor (no
 *  fsync, no rename: a temporary deleted once processed). */
typedef struct qv_spill_part {
  char *path;    /**< owned; NULL until opened */
  int fd;        /**< -1 when closed */
  qv_writer *w;  /**< NULL when closed */
  int64_t rows;  /**< rows written */
  int64_t bytes; /**< buffer bytes written */
} qv_spill_part;

/** An unopened partition file (path NULL, fd -1). */
void qv_spill_part_init(qv_spill_part *p);

/** Creates `path` (which must not exist; mode 0600; the path is copied)
 *  and opens a stream writer of the struct type `row_type`'s fields on it
 *  (one batch per write, one thread). `what` names the operator in errors.
 *  On failure *p holds whatever must still be closed and discarded. */
qv_status qv_spill_part_open(qv_spill_part *p, const char *path, qv_type *row_type,
                             const char *what, qv_error *err) QV_NODISCARD;

/** Appends one struct batch (borrowed) to an open partition file. */
qv_status qv_spill_part_write(qv_spill_part *p, qv_array *batch, const char *what,
                              qv_error *err) QV_NODISCARD;

/** Finishes a partition file: when `st` is QV_OK the stream is closed
 *  (its end marker written), otherwise the writer is aborted; then the
 *  descriptor is closed. Returns `st`, or the first error of the close.
 *  The file and path stay for the caller to read and discard. */
qv_status qv_spill_part_close(qv_spill_part *p, qv_status st, const char *what,
                              qv_error *err) QV_NODISCARD;

/** Closes (aborting) what is still open, removes the file and frees the
 *  path; *p is left unopened. */
void qv_spill_part_discard(qv_spill_part *p);

/** The default memory budget of an operator that can spill: a quarter of
 *  physical memory (1 GiB when the system does not say). */
int64_t qv_spill_default_memory_limit(void);

/** Opens the private directory (mode 0700) of one spilling run under
 *  `base` (NULL or empty: $TMPDIR, else /tmp), named `<base>/<label>-<pid>`
 *  plus the atomic-directory helper's pid/start/random suffix, so a
 *  directory left by a killed writer is reclaimed by the next run there.
 *  `what` names the operator in errors ("join spill"). On success *out is
 *  owned by the caller, who removes it with qv_atomic_dir_abort. */
qv_status qv_spill_dir_open(const char *base, const char *label, const char *what,
                            qv_atomic_dir **out, qv_error *err);

#endif /* QV_SPILL_INTERNAL_H */
