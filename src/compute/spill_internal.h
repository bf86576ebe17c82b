/*
 * spill_internal.h — what group-by (groupby_spill.c) and the grace hash
 * join (join_spill.c) share when they go past their memory budget: the
 * default budget and the private directory their partition files live in.
 * Compute layer, private to src/compute; implemented in spill.c.
 */
#ifndef QV_SPILL_INTERNAL_H
#define QV_SPILL_INTERNAL_H

#include <stdint.h>

#include "core/atomic_internal.h"
#include "quiver/core.h"

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
