/* Partitions of a training set over N workers, and each worker's mini-batch iterator.
 *
 * - DEFDP: N disjoint IID shards (a seeded shuffle split into N nearly equal parts).
 * - SELDP: the set split into N equal chunks (after a seeded shuffle); worker n reads the chunks
 *   as a circular queue starting at chunk n, so every worker sees the whole set and on any step
 *   the N workers draw from N different chunks (SelSync's SelDP). With chunk size
 *   C = floor(n/N), slot j of step t of worker w lies in chunk (w + floor((t*b + j) / C)) mod N;
 *   the n mod N samples left over are read by nobody (partition_owner gives -1).
 * - SELDP_PERM: the public-code variant: each worker reads a full permutation of the set,
 *   seeded by its rank.
 * - NONIID: each worker holds the samples of only k labels (labels assigned round-robin from a
 *   seeded label order; samples of a label split evenly among the workers holding it).
 * - DIRICHLET: label skew of concentration alpha (Hsu et al. 2019; NIID-Bench, Li et al. 2022):
 *   each class's samples are split over the workers in proportions drawn from Dir_N(alpha), a
 *   worker that already holds n/N samples taking no more; redrawn until every worker holds at
 *   least min(10, n/(2N)) samples. Small alpha: few classes per worker; large: near IID.
 *
 *     partition *p; partition_create(&train, N, PARTITION_SELDP, 0, seed, &p);
 *     batch_iter *it = batch_iter_create(p, worker, seed);
 *     size_t idx[64]; batch_iter_next(it, idx, 64);   // indices into the training set
 */
#ifndef SS_EMU_PARTITION_H
#define SS_EMU_PARTITION_H

#include "emu/dataset.h"

#include <stddef.h>
#include <stdint.h>

typedef enum partition_kind {
    PARTITION_DEFDP = 0,
    PARTITION_SELDP = 1,
    PARTITION_SELDP_PERM = 2,
    PARTITION_NONIID = 3,
    PARTITION_DIRICHLET = 4
} partition_kind;

typedef struct partition partition;

/* Parses "defdp", "seldp", "seldp-perm", "noniid:K", "dirichlet:ALPHA"; *param is K or ALPHA (0
 * for the others). SS_EUSAGE names the valid ones. */
int partition_parse(const char *text, partition_kind *kind, double *param);
const char *partition_kind_name(partition_kind kind);

/* The checks of partition_create() alone (workers, samples, noniid's k against the classes):
 * a run makes them before it writes anything. */
int partition_check(const dataset *train, int workers, partition_kind kind, double param);
/* param: NONIID's k (1 <= k <= classes, whole), DIRICHLET's alpha (> 0); unused otherwise. */
int partition_create(const dataset *train, int workers, partition_kind kind, double param,
                     uint64_t seed, partition **out);
void partition_destroy(partition *p);

/* The sample indices worker w reads in one pass, in reading order before per-epoch shuffling
 * (DEFDP/NONIID: its shard; SELDP: chunk w, w+1, ... w-1; SELDP_PERM: a permutation). */
size_t partition_worker_size(const partition *p, int worker);
const size_t *partition_worker_indices(const partition *p, int worker);

/* The index of the chunk (0..N-1) a sample belongs to under SELDP, or the shard owner. */
int partition_owner(const partition *p, size_t sample);

/* A worker's endless mini-batch iterator over its indices. Each pass reshuffles with the
 * worker's seeded stream; SELDP shuffles inside each chunk and keeps the chunk order. */
typedef struct batch_iter batch_iter;
batch_iter *batch_iter_create(const partition *p, int worker, uint64_t seed);
void batch_iter_destroy(batch_iter *it);
void batch_iter_next(batch_iter *it, size_t *indices, int batch);
long batch_iter_passes(const batch_iter *it); /* completed passes over the worker's indices */

/* Gathers samples into contiguous host arrays: x (batch, D), y (batch). */
void dataset_gather(const dataset *d, const size_t *indices, int batch, float *x, uint8_t *y);

#endif
