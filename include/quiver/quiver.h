/*
 * quiver/quiver.h — umbrella header: include this to get the whole public
 * API. Layers, bottom up: core (status, buffers, types, arrays, builders), ipc
 * (reading Arrow IPC files and streams, C Data Interface), row printing,
 * tables (in-memory, memory-mapped, concatenation; recipes),
 * dataset building blocks (numpy-exact shuffles, fingerprints, Hugging
 * Face datasets features and directory layouts), the expression language
 * over columns, compute kernels (sort indices, grouper, unique), and the
 * Dataset object (indices mappings, transforms, cache files, save_to_disk).
 */
#ifndef QUIVER_QUIVER_H
#define QUIVER_QUIVER_H

#include "quiver/core.h"
#include "quiver/type.h"
#include "quiver/array.h"
#include "quiver/guard.h"
#include "quiver/builder.h"
#include "quiver/ipc.h"
#include "quiver/cdata.h"
#include "quiver/print.h"
#include "quiver/writer.h"
#include "quiver/table.h"
#include "quiver/random.h"
#include "quiver/fingerprint.h"
#include "quiver/hf.h"
#include "quiver/expr.h"
#include "quiver/compute.h"
#include "quiver/dataset.h"

#endif /* QUIVER_QUIVER_H */
