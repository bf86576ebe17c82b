/*
 * validate_internal.h — the internal entry point behind qv_array_validate
 * (core/validate.c), with options that only other layers of quiver need.
 * Not installed.
 */
#ifndef QUIVER_CORE_VALIDATE_INTERNAL_H
#define QUIVER_CORE_VALIDATE_INTERNAL_H

#include "quiver/array.h"

/* Flags for qv_array_validate_ex. */
enum {
  /* Do not descend into the values of dictionary-encoded arrays: the IPC
   * loader validates each dictionary once when its dictionary batch is
   * loaded, not again for every record batch that uses it. The indices
   * are still checked against the dictionary's length. */
  QV_VALIDATE_SKIP_DICTIONARY_VALUES = 1
};

/** qv_array_validate with flags (QV_VALIDATE_* above). */
qv_status qv_array_validate_ex(const qv_array *a, qv_validate_level level, const char *path,
                               unsigned flags, qv_error *err);

/** Length of the valid UTF-8 prefix of s[0..n) (n when all of it is valid
 *  UTF-8 per RFC 3629: no overlongs, surrogates or code points past
 *  U+10FFFF). The check FULL validation applies to string data. */
int64_t qv_utf8_valid_prefix(const uint8_t *s, int64_t n);

#endif /* QUIVER_CORE_VALIDATE_INTERNAL_H */
