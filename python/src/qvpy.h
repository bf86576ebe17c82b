/*
 * qvpy.h — private header of the CPython extension `quiver._quiver`
 * (python/src/, the python/ layer at the top beside the CLI). It declares
 * what the extension's files share; nothing here is public API. The files,
 * by seam:
 *   quivermodule.c  module functions and init, errors, argument helpers
 *   values.c        Arrow values -> Python objects
 *   batch.c         Arrow PyCapsules and quiver.Batch
 *   dataset.c       quiver.Dataset and its iterators
 *   convert.c       Python values -> Arrow arrays
 *   mapfilter.c     Python callables as map / filter functions
 *   dsdict.c        DatasetDict saving / split names, calls into Python
 *   io.c            CSV / JSON Lines reading and writing, Dataset.from_* / to_*
 *   construct.c     constructors (Python columns, Arrow streams), cast, add_column, unique
 * Every function returning a new PyObject * returns a new reference, or
 * NULL with a Python exception set; every bool-returning helper returns
 * false with a Python exception set.
 */
#ifndef QVPY_H
#define QVPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quiver/array.h"
#include "quiver/builder.h"
#include "quiver/cdata.h"
#include "quiver/dataset.h"
#include "quiver/guard.h"
#include "quiver/hf.h"
#include "quiver/ipc.h"
#include "quiver/print.h"

/** Deepest nesting converted to Python values (as qv_format_value_json). */
#define QVPY_MAX_DEPTH 256
/** Rows per batch when iterating rows (iter(ds)) and reading columns. */
#define QVPY_ROW_BATCH 1000

/* ---- module state (quivermodule.c; set by module init, never freed) ---- */
/* quiver.QuiverError and its subclasses, each also the Python exception
 * datasets raises for the same misuse (docs/python.md, "Errors"). */
extern PyObject *qvpy_QuiverError;
extern PyObject *qvpy_ValueError, *qvpy_IndexError, *qvpy_KeyError, *qvpy_TypeError,
    *qvpy_FileNotFoundError;
extern PyObject *qvpy_json_loads;  /* json.loads */
extern PyObject *qvpy_decimal_cls; /* decimal.Decimal */

/* ---- types ------------------------------------------------------------- */
/* The batches of one table as ds[i] reads them (dataset.c): each batch's
 * first row, and per batch (fetched when first read) a reference to it and
 * the addresses whose load checks its mapped bytes (qv_guard_array_points;
 * np -1: check the whole array), so that a row costs a binary search and
 * one guarded load instead of a table lookup and a walk of the batch. */
typedef struct {
  qv_array *batch; /* reference, or NULL: not fetched yet */
  int np;
  const void *pts[4];
} qvpy_bslot;

typedef struct {
  int64_t nb;
  int64_t *starts; /* nb + 1: batch b holds rows [starts[b], starts[b + 1]) */
  qvpy_bslot *slot;
} qvpy_tcache;

typedef struct {
  PyObject_HEAD qv_dataset *ds; /* reference */
  qvpy_tcache *rows_data;       /* ds's data table's batches, made on first ds[i], or NULL */
  qvpy_tcache *rows_indices;    /* its indices mapping's */
  PyObject *origin;             /* how it was made, as plain data (pickle.c), or NULL */
  PyObject *format; /* the output format (quiver._formats state), or NULL: rows as Python
                       values, straight from C (docs/python.md, "Formats") */
  int media;        /* features hold an Image/Audio (rows decoded in Python by
                       quiver._formats): 1 yes, 0 no, -1 not looked at yet */
  PyObject *info;   /* the quiver.DatasetInfo `info` gave (kept so that changes to it
                       are saved by save_to_disk), or NULL */
} DatasetObject;

typedef struct {
  PyObject_HEAD qv_array *array; /* STRUCT array, reference */
  qv_schema *schema;             /* reference */
} BatchObject;

extern PyTypeObject qvpy_DatasetType, qvpy_BatchType, qvpy_RowIterType, qvpy_BatchIterType;

/* ---- errors and arguments (quivermodule.c) ----------------------------- */
/** Raise err's message as the QuiverError subclass for `st` (QV_EARG:
 * QuiverValueError, QV_ERANGE: QuiverIndexError, QV_ETYPE:
 * QuiverTypeError, others QuiverError); `status` and `code` attributes
 * name the qv_status. Returns NULL. */
PyObject *qvpy_raise_qv(qv_status st, const qv_error *err);
/** The same with the class chosen by the caller (a QuiverError subclass),
 * for errors whose Python class depends on the situation. Returns NULL. */
PyObject *qvpy_raise_qv_as(PyObject *cls, qv_status st, const qv_error *err);
/** A Python int (not bool) as int64 into *out; `what` names it in errors. */
bool qvpy_arg_int64(PyObject *o, const char *what, int64_t *out);
/** A seed: None (random, from os.urandom) or an int in [0, 2**64). */
bool qvpy_arg_seed(PyObject *o, uint64_t *out);
/** Column names (a str or a sequence of str) as UTF-8 pointers into the
 * list kept alive in *keep (the caller drops it); *out freed with
 * PyMem_Free. */
bool qvpy_arg_names(PyObject *o, const char *what, PyObject **keep, const char ***out, int32_t *n);
/** Row numbers from an iterable of ints checked against [0, n_rows)
 * (negative from the end when negative_ok); *out freed with PyMem_Free. */
bool qvpy_arg_rows(PyObject *o, int64_t n_rows, bool negative_ok, int64_t **out, int64_t *n);
/** Dataset options: in-memory indices mappings unless `cache`. */
qv_dataset_options qvpy_options(int cache);

/* ---- Arrow values -> Python (values.c) --------------------------------- */
/** Imports the datetime C API for values.c (datetime.h keeps its pointer
 * per translation unit); false with an exception set on failure. */
bool qvpy_values_init(void);
/** Element `row` (logical, offset applied inside) of `a` as a Python value. */
PyObject *qvpy_value_of(const qv_array *a, int64_t row, int depth);
/** Whether the (possibly mapped) buffers of `a` are all still there: values
 * are read outside quiver's guard, so a file that shrank since it was mapped
 * raises QuiverError (QV_ECHANGED) here instead of a SIGBUS (quiver/guard.h).
 * False with the exception set. */
bool qvpy_mapped_bytes_there(const qv_array *a);
/** Row `row` of a STRUCT batch as {column: value}; callers check the batch
 * with qvpy_mapped_bytes_there once first. */
PyObject *qvpy_row_dict(const qv_array *batch, int64_t row);
/** qvpy_row_dict in its steps, for a caller that checks the batch's mapped
 * bytes between them: the row's bytes prefetched (strings false: touches
 * nothing; strings true: reads the string offsets, then prefetches the
 * strings' bytes), then the dict built. */
void qvpy_row_prefetch(const qv_array *batch, int64_t row, bool strings);
PyObject *qvpy_row_build(const qv_array *batch, int64_t row);
/** A STRUCT batch as {column: [values]}. */
PyObject *qvpy_columns_dict(const qv_array *batch);
/** The rows of `t` (borrowed) as {column: [values]}, each list filled from
 * the table's batches directly (qv_table_batch guard-checks each one). */
PyObject *qvpy_table_columns_dict(qv_table *t);
/** Parts of STRUCT batches of `schema` as {column: [values]}: part p is
 * rows [first[p], first[p] + count[p]) of batches[p] (borrowed; their
 * mapped bytes checked by the caller), `rows` the sum of the counts. */
PyObject *qvpy_parts_columns_dict(const qv_schema *schema, qv_array *const *batches,
                                  const int64_t *first, const int64_t *count, int64_t nparts,
                                  int64_t rows);

/* ---- capsules and batches (batch.c) ------------------------------------ */
/** Destructor of "arrow_array_stream" capsules. */
void qvpy_stream_capsule_free(PyObject *cap);
/** A capsule named `name` over a zeroed struct of `size` bytes (freed by
 * `d`); *out points at the struct, to be filled by an export. */
PyObject *qvpy_new_capsule(size_t size, const char *name, PyCapsule_Destructor d, void **out);
/** An "arrow_schema" capsule exporting `schema` (borrowed). */
PyObject *qvpy_schema_capsule(const qv_schema *schema);
/** requested_schema of __arrow_c_array__/__arrow_c_stream__ checked. */
bool qvpy_check_requested(PyObject *req, const qv_schema *schema);
/** A quiver.Batch over `array` (its reference taken over, also on
 * failure) and `schema` (a reference taken). */
PyObject *qvpy_new_batch(qv_array *array, qv_schema *schema);
/** Dataset._numpy_iter(batch_size, drop_last_batch=False): for a dataset
 * with an indices mapping, an iterator of (first row, rows, {column: numpy
 * array, or None where the numpy format needs the general path}), each
 * row copied from the mapped data batch holding it straight into the
 * arrays (no Arrow batch gathered first); None without a mapping. */
PyObject *qvpy_Dataset_numpy_iter(DatasetObject *self, PyObject *args);
/** The field names of `s` as a list of str. */
PyObject *qvpy_column_names_of(const qv_schema *s);

/* ---- Dataset (dataset.c) ----------------------------------------------- */
/** A transform's result: a new quiver.Dataset over `out` (its reference
 * taken over) when st is QV_OK, else the error raised. */
PyObject *qvpy_result(qv_status st, qv_dataset *out, const qv_error *err);
/** save_to_disk's max_shard_size (None, bytes or "100MB") and num_shards
 * (None or int) into *so (zeroed first); false with the error raised. */
bool qvpy_save_options(PyObject *size_obj, PyObject *shards_obj, qv_save_options *so);

/* ---- DatasetDict support (dsdict.c) ------------------------------------ */
/** module.attr(arg): a new reference, or NULL with the error raised; the
 * reference on `arg` is taken over (also on failure). */
PyObject *qvpy_call_python(const char *module, const char *attr, PyObject *arg);
/** _quiver._dataset_dict_save_to_disk(datasets, names, path,
 * max_shard_size=None, num_shards=None). */
PyObject *qvpy_mod_dataset_dict_save(PyObject *mod, PyObject *args, PyObject *kwargs);
/* info.c: Dataset._info_json / _with_info and the module's _assemble_save. */
PyObject *qvpy_dataset_info_json(PyObject *self, PyObject *unused);
PyObject *qvpy_dataset_with_info(PyObject *self, PyObject *arg);
PyObject *qvpy_mod_assemble_save(PyObject *mod, PyObject *args, PyObject *kwargs);
PyObject *qvpy_mod_write_arrow_stream(PyObject *mod, PyObject *args);
/** _quiver._dataset_dict_splits(path) -> list of split names. */
PyObject *qvpy_mod_dataset_dict_splits(PyObject *mod, PyObject *arg);

/** quiver._formats.<fn>(self, *args, **kwargs) (args may be NULL). */
PyObject *qvpy_call_formats(const char *fn, PyObject *self, PyObject *args, PyObject *kwargs);

/* ---- CSV / JSON Lines (io.c) ------------------------------------------ */
/** _quiver._read_csv(path, delimiter=None): a Dataset typed as
 * datasets.load_dataset("csv") types it (pandas_types). */
PyObject *qvpy_mod_read_csv(PyObject *mod, PyObject *args, PyObject *kwargs);
/** _quiver._write_text(dataset, path, kind, delimiter=None,
 * batch_size=10000): the rows through the C CSV ("csv"), JSON Lines
 * ("json") or Parquet ("parquet", snappy) writer, atomically. */
PyObject *qvpy_mod_write_text(PyObject *mod, PyObject *args, PyObject *kwargs);
/** _quiver._sniff(path): qv_path_sniff's kind name ("parquet", "csv",
 * "json", "arrow file", ...). */
PyObject *qvpy_mod_sniff(PyObject *mod, PyObject *arg);
/** Dataset.to_csv / to_json and the class methods from_parquet / from_csv /
 * from_json: forward to quiver._io. */
PyObject *qvpy_Dataset_to_csv(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *qvpy_Dataset_to_json(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *qvpy_Dataset_to_parquet(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *qvpy_Dataset_from_parquet(PyObject *cls, PyObject *args, PyObject *kwargs);
PyObject *qvpy_Dataset_from_csv(PyObject *cls, PyObject *args, PyObject *kwargs);
PyObject *qvpy_Dataset_from_json(PyObject *cls, PyObject *args, PyObject *kwargs);

/* ---- Python -> Arrow (convert.c) --------------------------------------- */
/** A map function's result (a dict {column: list or Arrow array} or an
 * Arrow record batch) as a STRUCT array in *out (a new reference). */
bool qvpy_result_struct(PyObject *r, const char *what, int64_t first_row, qv_array **out);
/** datasets' try_original_type: each column of the STRUCT array *s named
 * as a column of `orig` with another type is cast to that type when the
 * cast is exact (qv_array_cast), else kept; *s is replaced (its reference
 * dropped) when a column changed. */
bool qvpy_struct_keep_types(qv_array **s, const qv_schema *orig);

/* ---- pickling (pickle.c) ----------------------------------------------- */
/** `result` (a reference taken over; NULL passes through) given the origin
 * (parent's origin, op, args, kwargs) when the parent has one and the
 * arguments are plain data (copied); returns result, or NULL on failure. */
PyObject *qvpy_derive(DatasetObject *parent, PyObject *result, const char *op, PyObject *args,
                      PyObject *kwargs);
/** `result` (a Dataset written to cache files; reference taken over, NULL
 * passes through) given the origin ("tables", data recipe, indices recipe
 * or None, fingerprint), so that its transforms have origins too; returns
 * result, or NULL on failure. */
PyObject *qvpy_tables_origin(PyObject *result);
/** Dataset._origin: the origin, or None. */
PyObject *qvpy_Dataset_origin(DatasetObject *self, void *c);
/** Dataset._recipes(): (data table recipe, indices recipe or None), bytes. */
PyObject *qvpy_Dataset_recipes(DatasetObject *self, PyObject *unused);
/** Dataset._write_indices(path): the in-memory indices mapping written to
 * `path` (an Arrow file, atomically): True, or False without one. */
PyObject *qvpy_Dataset_write_indices(DatasetObject *self, PyObject *path);
/** Dataset._with_indices_file(path, fingerprint, origin): self (without a
 * mapping) through the indices mapping file `path`, with `fingerprint`
 * and `origin` (None: none). */
PyObject *qvpy_Dataset_with_indices_file(DatasetObject *self, PyObject *args);
/** Dataset.__reduce__: quiver._pickle.reduce(self). */
PyObject *qvpy_Dataset_reduce(DatasetObject *self, PyObject *unused);
/** _quiver._from_recipes(data, indices, fingerprint) -> Dataset. */
PyObject *qvpy_mod_from_recipes(PyObject *mod, PyObject *args);

/* ---- map / filter (mapfilter.c) ---------------------------------------- */
PyObject *qvpy_Dataset_map(DatasetObject *self, PyObject *args, PyObject *kwargs);
PyObject *qvpy_Dataset_filter(DatasetObject *self, PyObject *args, PyObject *kwargs);
/* groupby.c: Dataset.group_by(keys, *, sort=False, memory_limit=None) -> quiver.GroupBy */
PyObject *qvpy_Dataset_group_by(DatasetObject *self, PyObject *args, PyObject *kwargs);

/* ---- constructors and column methods (construct.c) -------------------- */
/** _quiver._from_columns(mapping, fingerprint=None) -> Dataset. */
PyObject *qvpy_mod_from_columns(PyObject *mod, PyObject *args);
/** _quiver._from_stream(obj, fingerprint=None) -> Dataset (obj has __arrow_c_stream__). */
PyObject *qvpy_mod_from_stream(PyObject *mod, PyObject *args);
/** Dataset._cast(features_json), _cast_column(column, feature_json),
 * _add_column(name, values, feature_json=None), unique(column). */
PyObject *qvpy_Dataset_cast(DatasetObject *self, PyObject *json);
PyObject *qvpy_Dataset_cast_column(DatasetObject *self, PyObject *args);
PyObject *qvpy_Dataset_add_column(DatasetObject *self, PyObject *args);
PyObject *qvpy_Dataset_unique(DatasetObject *self, PyObject *column);
/** quiver._api.<fn>(self, *args, **kwargs); self NULL for functions of the
 * class (from_dict...); args may be NULL. */
PyObject *qvpy_call_api(const char *fn, PyObject *self, PyObject *args, PyObject *kwargs);

/* ---- join / distinct / value_counts (join.c) --------------------------- */
PyObject *qvpy_Dataset_join(DatasetObject *self, PyObject *args, PyObject *kwargs);
PyObject *qvpy_Dataset_distinct(DatasetObject *self, PyObject *args, PyObject *kwargs);
PyObject *qvpy_Dataset_value_counts(DatasetObject *self, PyObject *arg);

#endif
