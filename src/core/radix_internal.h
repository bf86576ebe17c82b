/*
 * radix_internal.h — stable least-significant-digit radix sort of 64-bit
 * words by a bit field (src/core/radix.c). Callers pack what they sort
 * into the words themselves, typically key << vbits | payload, and sort
 * by the key bits: 8 bytes moved per element and pass. Core layer;
 * internal, not installed.
 */
#ifndef QUIVER_CORE_RADIX_INTERNAL_H
#define QUIVER_CORE_RADIX_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

/* LSD digits are 8 to QV_RADIX_DIGIT_MAX bits wide. QV_RADIX_HIST_WORDS
 * counters hold two sets of the counts of every pass (6 passes of 2^11 at
 * most): the `hist` scratch every call below takes. */
#define QV_RADIX_DIGIT_MAX 11
#define QV_RADIX_HIST_WORDS (2 * (6 << QV_RADIX_DIGIT_MAX))

/** Stable insertion sort of w[0..m) by their bits from `lo` up (for short
 *  arrays). */
void qv_radix_insertion_words(uint64_t *w, int64_t m, int lo);

/**
 * Counts of every digit of `passes` LSD passes of `dw` bits over m keys in
 * one read: pass p counts digit ((k[i] - sub) >> lo >> p * dw) &
 * (2^dw - 1) into hist[p << dw ...] (hist: QV_RADIX_HIST_WORDS counters,
 * overwritten; passes * 2^dw * 2 of them are used).
 */
void qv_radix_count(const uint64_t *k, int64_t m, uint64_t sub, int lo, int dw, int passes,
                    uint32_t *hist);

/**
 * Stable LSD radix sort of w[0..m) (m < 2^32) by their bits [lo, lo + bits):
 * bits above lo + bits must be equal in all words; the bits below ride
 * along. t: m words of scratch; hist: QV_RADIX_HIST_WORDS counters. A pass
 * whose digit is the same in every word is skipped. Returns true when the
 * result is in t, its words then and-ed with t_mask (written by the last
 * pass: no extra pass to unpack them); a result in w is left whole.
 */
bool qv_radix_sort_words(uint64_t *w, uint64_t *t, int64_t m, int lo, int bits, uint32_t *hist,
                         uint64_t t_mask);

#endif
