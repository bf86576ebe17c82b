/*
 * error.c — status names, error text formatting and the version call.
 * Core layer: used by every other file in quiver.
 */
#include <stdio.h>
#include <string.h>

#include "quiver/core.h"

const char *qv_version(void) { return QV_VERSION_STRING; }

const char *qv_status_name(qv_status st) {
  switch (st) {
    case QV_OK: return "ok";
    case QV_EINVAL: return "invalid data";
    case QV_ENOTSUP: return "unsupported";
    case QV_ENOMEM: return "out of memory";
    case QV_EIO: return "I/O error";
    case QV_EARG: return "invalid argument";
    case QV_ETYPE: return "type error";
    case QV_ERANGE: return "out of range";
    case QV_ECHANGED: return "file changed";
  }
  return "unknown status";
}

qv_status qv_error_set(qv_error *err, qv_status st, const char *fmt, ...) {
  if (err != NULL) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
  }
  return st;
}

qv_status qv_error_prefix(qv_error *err, qv_status st, const char *fmt, ...) {
  if (err == NULL) return st;
  char prefix[QV_ERROR_SIZE];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  if (n <= 0) return st;
  size_t plen = strlen(prefix);
  size_t mlen = strnlen(err->message, sizeof err->message - 1);
  if (plen >= sizeof err->message - 1) plen = sizeof err->message - 1;
  size_t keep = sizeof err->message - 1 - plen;
  if (mlen > keep) mlen = keep;
  memmove(err->message + plen, err->message, mlen);
  memcpy(err->message, prefix, plen);
  err->message[plen + mlen] = '\0';
  return st;
}
