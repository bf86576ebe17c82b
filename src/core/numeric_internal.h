/*
 * numeric_internal.h — value conversions shared by the JSON integration
 * format (ipc layer) and value rendering in comparisons (core layer):
 * decimal integers <-> text, IEEE half floats, shortest round-trip
 * formatting of floats. Internal to quiver (not installed).
 */
#ifndef QUIVER_NUMERIC_INTERNAL_H
#define QUIVER_NUMERIC_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

/** Largest decimal width in bytes (decimal256). */
#define QV_DECIMAL_MAX_BYTES 32
/** Room for any decimal256 rendered with sign, point and exponent. */
#define QV_DECIMAL_STRING_MAX 96

/**
 * Parse an integer string ("-12345", optional leading '+' or '-', ASCII
 * digits only, at least one digit) into a `nbytes`-wide (4, 8, 16 or 32)
 * two's complement little-endian integer. Returns false when the text is
 * not an integer or its value does not fit the width.
 */
bool qv_num_decimal_parse(const char *s, int64_t len, int nbytes,
                            uint8_t *out);

/**
 * Render a `nbytes`-wide two's complement little-endian integer in base
 * 10. With scale > 0 a decimal point is inserted ("12345", scale 2 ->
 * "123.45"); with scale < 0 the value is followed by "e<-scale>"; scale 0
 * gives the plain integer. `out` needs QV_DECIMAL_STRING_MAX bytes.
 * Returns the string length.
 */
int qv_num_decimal_format(const uint8_t *in, int nbytes, int32_t scale,
                         char *out);

/** Exact value of an IEEE 754 binary16. */
double qv_num_half_to_double(uint16_t h);
/** Nearest binary16 (round half to even; overflow to infinity). */
uint16_t qv_num_double_to_half(double d);

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
