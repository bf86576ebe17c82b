/*
 * fuzz_ipc_stream.c — libFuzzer target for the IPC stream reader.
 * Invariant defended: no input makes the reader crash, hang, leak or
 * allocate without bound; every input either decodes (every batch valid at
 * FULL validation) or fails with a status and an error message.
 * Exercises both the mapped path (qv_reader_open_buffer) and the
 * sequential descriptor path (qv_reader_open_fd) on a memfd.
 */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "quiver/ipc.h"

static void drain(qv_reader *r) {
  qv_error err;
  for (;;) {
    qv_array *b = NULL;
    if (qv_reader_next(r, &b, &err) != QV_OK || b == NULL) break;
    qv_array_unref(b);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  qv_read_options opts = {QV_VALIDATE_FULL, true, (int64_t)64 << 20};
  qv_error err;
  qv_buffer *buf = NULL;
  if (qv_buffer_alloc((int64_t)size, &buf, &err) != QV_OK) return 0;
  for (size_t i = 0; i < size; i++) buf->data[i] = data[i];
  qv_reader *r = NULL;
  if (qv_reader_open_buffer(buf, &opts, &r, &err) == QV_OK) {
    /* Random access in reverse order too: exercises dictionary replay. */
    for (int64_t i = qv_reader_num_batches(r) - 1; i >= 0; i--) {
      qv_array *b = NULL;
      if (qv_reader_batch(r, i, &b, &err) == QV_OK) qv_array_unref(b);
    }
    drain(r);
    qv_reader_close(r);
  }
  qv_buffer_unref(buf);

  int fd = memfd_create("fuzz", 0);
  if (fd >= 0) {
    if (write(fd, data, size) == (ssize_t)size && lseek(fd, 0, SEEK_SET) == 0 &&
        qv_reader_open_fd(fd, &opts, &r, &err) == QV_OK) {
      drain(r);
      qv_reader_close(r);
    }
    close(fd);
  }
  return 0;
}
