/* The exchange over MPI (sim/exchange/exchange.h): one process per worker, started by mpirun, the
 * parameter servers on ranks of their own. OpenMPI is reached through common/mpi_api.h.
 *
 *     mpirun -np N+K syncsim ...            // ranks 0..N-1: workers, N..N+K-1: servers
 *     exchange_mpi_opts o = {.n_workers = N, .n_servers = K};
 *     exchange *ex;
 *     if (exchange_mpi_open(&o, &ex) != SS_OK) ... ss_error_message()
 *     ex->ops->ps_start(ex->self, &ps);     // every rank, when the policy uses servers
 *     ex->ops->run_workers(ex->self, N, worker, ctx, &hosted);  // this rank's worker, or serve
 *                                           // (exchange_mpi_serve) until every worker is done
 *     exchange_mpi_barrier(ex); exchange_mpi_gather_bytes(...);  // the runner's side channel
 *     exchange_mpi_close(ex);
 *
 * What differs from the simulation backend:
 * - buffers are moved: an all-reduce leaves the SUM over the members in buf; a PS pull lands each
 *   server's shard in its slice of buf. A NULL buf moves `count` floats of scratch (the size
 *   matters, not the data); so does a NULL all-gather (max(count, 1) bytes each).
 * - now() is real time: CLOCK_MONOTONIC seconds since the barrier in exchange_mpi_open.
 * - exchange_result.bytes_sent / bytes_recv are the volumes the simulation backend reports for
 *   the same call with its default algorithms, computed from `bytes` (not what OpenMPI's own
 *   algorithm moved): all-reduce, ring: 2 (m - 1) chunks of bytes / m each way; all-gather,
 *   Bruck: sum over its steps of min(d, m - d) parts; broadcast, binomial tree: one message per
 *   child, one from the parent; send / recv: bytes; PS push: the shards, pull: 0 sent (empty
 *   requests) and the shards received.
 * - ps_start runs on every rank (each keeps its options); the server ranks then run
 *   exchange_mpi_serve. clock_wait / clock_advance need a server (server 0 keeps the clocks);
 *   clock_advance cannot tell a worker when the slowest clock moved, so `rounds` is left
 *   untouched: the runner counts rounds from its own clock.
 * - under a synchronous PS (async = 0) on_push and on_pull still run, with a NULL payload: the
 *   data is the server's sum. Under async = 1 without push_buffer, pushes land in scratch and
 *   on_push gets NULL; without pull_buffer, pulls are answered with zeros. */
#ifndef SS_SIM_EXCHANGE_MPI_H
#define SS_SIM_EXCHANGE_MPI_H

#include "sim/exchange/exchange.h"

#include <stddef.h>

typedef struct exchange_mpi_opts {
    int n_workers; /* N >= 1: ranks 0..N-1 */
    int n_servers; /* K >= 0: ranks N..N+K-1 */
} exchange_mpi_opts;

/* Collective over MPI_COMM_WORLD (initialises MPI if nobody did). SS_EUSAGE outside mpirun or
 * when the world is not N + K ranks; SS_EIO when OpenMPI cannot be opened or fails, or when
 * syncsim was built without it. */
int exchange_mpi_open(const exchange_mpi_opts *o, exchange **out);
/* This process's rank in MPI_COMM_WORLD (a worker's rank is its worker index). */
int exchange_mpi_rank(const exchange *ex);
/* 1 on a server rank (N..N+K-1). */
int exchange_mpi_is_server(const exchange *ex);
/* A server rank, after ps_start: answers the workers until every one called worker_done. */
int exchange_mpi_serve(exchange *ex);
/* Worker `worker` (this rank) tells every server it has finished (nothing when ps_start was not
 * called: no server listens). */
int exchange_mpi_worker_done(exchange *ex, int worker);

/* The runner's side channel over ALL ranks, outside any measured protocol. */
int exchange_mpi_barrier(exchange *ex);
/* Rank 0 receives every rank's n bytes at mine, concatenated in rank order, in *all (malloc'ed,
 * the caller frees), and each rank's count in counts[0..size-1]; other ranks get *all = NULL and
 * may pass counts = NULL. */
int exchange_mpi_gather_bytes(exchange *ex, const void *mine, size_t n, void **all, size_t *counts);
/* v[0..n-1] becomes the sum (op_max 0) or the maximum (op_max 1) over every rank. */
int exchange_mpi_allreduce_doubles(exchange *ex, double *v, int n, int op_max);
/* Workers only, called by every worker the same number of times: the stop vote of an
 * interruption. Waits for the vote posted by the previous call (*any: whether some worker voted
 * to stop then; 0 on the first call), then posts `mine` (MPI_Iallreduce, max) without waiting, so
 * that a synchronous step pays no round trip for it. */
int exchange_mpi_stop_vote(exchange *ex, int mine, int *any);
/* Frees the exchange's communicators and state (MPI stays initialised). NULL: no-op. */
void exchange_mpi_close(exchange *ex);

#endif
