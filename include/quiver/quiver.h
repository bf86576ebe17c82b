/*
 * quiver/quiver.h — umbrella header: include this to get the whole public
 * API (every header of include/quiver/; tests/headers/compile_alone.sh
 * checks that none is missing). Layers, bottom up: core (status, buffers,
 * types, arrays, builders, JSON rendering of values), ipc (reading and
 * writing Arrow IPC files and streams, C Data Interface, the integration
 * JSON format), tables (in-memory, memory-mapped, concatenation; recipes),
 * the row table (row-oriented key encoding, compare, hash), dataset
 * building blocks (numpy-exact shuffles, fingerprints, Hugging Face
 * datasets features and directory layouts), the expression language over
 * columns, compute kernels (sort indices, grouper, unique), and the Dataset
 * object (indices mappings, transforms, cache files, save_to_disk).
 */
#ifndef QUIVER_QUIVER_H
#define QUIVER_QUIVER_H

#include "quiver/array.h"
#include "quiver/builder.h"
#include "quiver/cdata.h"
#include "quiver/compute.h"
#include "quiver/core.h"
#include "quiver/csv.h"
#include "quiver/dataset.h"
#include "quiver/expr.h"
#include "quiver/fingerprint.h"
#include "quiver/guard.h"
#include "quiver/hf.h"
#include "quiver/integration.h"
#include "quiver/ipc.h"
#include "quiver/jsonl.h"
#include "quiver/parquet.h"
#include "quiver/parquet_writer.h"
#include "quiver/print.h"
#include "quiver/random.h"
#include "quiver/row.h"
#include "quiver/table.h"
#include "quiver/type.h"
#include "quiver/writer.h"

#endif /* QUIVER_QUIVER_H */
