/*
 * fuzz_recipe.c — libFuzzer target for table recipes
 * (qv_table_from_recipe). Invariant defended: no input makes the recipe
 * decoder crash, hang, leak or allocate without bound; every input either
 * fails with a status and a message, or gives a table whose every batch
 * decodes and validates, and whose own recipe decodes again to an equal
 * table. Inputs may name files ('F' nodes): those are only stat'ed unless
 * size, mtime, device and inode all match, so fuzzing opens nothing.
 * Seeds: fuzz/corpus/recipe (scripts/make_recipe_seeds.py).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "quiver/table.h"

/* Larger inputs add nothing but time (inline IPC is bounded by them). */
#define FUZZ_MAX_INPUT (1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_MAX_INPUT) return 0;
  qv_error err;
  qv_table *t = NULL;
  if (qv_table_from_recipe(data, (int64_t)size, &t, &err) != QV_OK) return 0;
  for (int64_t b = 0; b < qv_table_num_batches(t); b++) {
    qv_array *batch = NULL;
    if (qv_table_batch(t, b, &batch, &err) != QV_OK) continue;
    if (qv_array_validate(batch, QV_VALIDATE_FULL, "batch", &err) != QV_OK) {
      fprintf(stderr, "decoded batch %lld is invalid: %s\n", (long long)b, err.message);
      abort();
    }
    qv_array_unref(batch);
  }
  uint8_t *again = NULL;
  int64_t len = 0;
  if (qv_table_recipe(t, &again, &len, &err) == QV_OK) {
    qv_table *u = NULL;
    if (qv_table_from_recipe(again, len, &u, &err) != QV_OK) {
      fprintf(stderr, "a recipe quiver wrote does not decode: %s\n", err.message);
      abort();
    }
    if (!qv_table_equals(t, u, &err)) {
      fprintf(stderr, "recipe round trip differs: %s\n", err.message);
      abort();
    }
    qv_table_unref(u);
    free(again);
  }
  qv_table_unref(t);
  return 0;
}
