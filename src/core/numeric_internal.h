/*
 * numeric_internal.h — value conversions shared by the JSON integration
 * format (ipc layer) and value rendering in comparisons (core layer):
 * decimal integers from text, shortest round-trip formatting of floats,
 * integer parsing. Internal to quiver (not installed); the conversions
 * front ends need are public in quiver/array.h (implemented in numeric.c).
 */
#ifndef QUIVER_NUMERIC_INTERNAL_H
#define QUIVER_NUMERIC_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "quiver/array.h"

/** Largest decimal width in bytes (decimal256). */
#define QV_DECIMAL_MAX_BYTES 32

/**
 * Parse an integer string ("-12345", optional leading '+' or '-', ASCII
 * digits only, at least one digit) into a `nbytes`-wide (4, 8, 16 or 32)
 * two's complement little-endian integer. Returns false when the text is
 * not an integer or its value does not fit the width.
 */
bool qv_num_decimal_parse(const char *s, int64_t len, int nbytes, uint8_t *out);

/* Rendering decimals and converting half floats are public (quiver/array.h:
 * qv_decimal_to_string, qv_half_to_double, qv_double_to_half). */

/**
 * Shortest decimal text that reads back to the same value: for doubles
 * through strtod, for floats (`single` true, value already a float) through
 * (float)strtod. NaN -> "NaN", infinities -> "Infinity"/"-Infinity".
 * `out` needs 32 bytes. Returns the length.
 */
int qv_num_format_double(double v, bool single, char *out);

/** Parse a signed/unsigned 64-bit integer string (optional sign, digits
 *  only). Returns false on syntax error or overflow. */
bool qv_num_parse_int64(const char *s, int64_t len, int64_t *out);
bool qv_num_parse_uint64(const char *s, int64_t len, uint64_t *out);

#endif /* QUIVER_NUMERIC_INTERNAL_H */
