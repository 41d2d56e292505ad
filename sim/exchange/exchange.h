/* The exchange: every message a policy's worker sends or waits for, behind one interface, the way
 * the step source (sim/policy/step_source.h) hides compute. The policies (sim/policy/) call only
 * this; the backend decides what a message is: the simulation (sim/exchange/exchange_simgrid.h:
 * SimGrid actors, mailboxes and flows), or MPI (sim/exchange/exchange_mpi.h: one process per
 * worker, real data on a real network; `syncsim real`).
 *
 *     exchange *ex = ...;                                        // made by the runner
 *     exchange_group *world = ex->ops->group(ex->self, NULL, n);
 *     exchange_result r;
 *     double t0 = ex->ops->now(ex->self);
 *     ex->ops->allreduce(ex->self, world, rank, grad, count, count * 4.0, &r);   // blocking
 *     src->ops->aggregate(...);                                  // the mean, at this moment
 *     comm_s += ex->ops->now(ex->self) - t0; bytes_sent += r.bytes_sent;
 *
 * Rules (those of MPI): every member of a group calls the same collectives on it in the same
 * order with the same sizes; a worker is member i of a group made from members[0..m-1] when
 * members[i] is its rank (lists sorted by rank); every call returns when THIS member's part is
 * complete. Calls return an int status (common/status.h); SS_EUSAGE for invalid arguments.
 *
 * Buffers are owned by the caller. Every data operation takes a pointer to the data, its element
 * count and the bytes it stands for on the wire. The pointer may be NULL where only the size
 * matters: in the simulation the step source holds every replica in one process and does the
 * arithmetic in aggregate() (emulation) or none at all (replay), so the policies pass NULL and the
 * simulation backend moves `bytes` without touching any buffer. Vectors are of float.
 *
 * The MPI backend (sim/exchange/exchange_mpi.h: one rank per worker, the parameter servers on ranks
 * of their own, after the workers):
 * - now: CLOCK_MONOTONIC seconds since a barrier of every rank when the exchange opened;
 * - group: MPI_Comm_create_group() of the workers' communicator restricted to the list
 *   (collective over the members only, so the groups of DS-Sync's shuffled pairs can be made by
 *   the pairs alone), cached by list; NULL: the workers' communicator (MPI_Comm_split of
 *   MPI_COMM_WORLD, servers apart);
 * - allreduce: MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM); the _start/_test/_wait
 *   form: MPI_Iallreduce, MPI_Test, MPI_Wait;
 * - allgather: MPI_Allgather(mine, count, MPI_BYTE, all, count, MPI_BYTE);
 * - broadcast: MPI_Bcast(buf, count, MPI_FLOAT, root);
 * - send / recv: MPI_Send / MPI_Recv of count floats (of scratch when buf is NULL: injected
 *   samples are read by the receiver's source from its own data set); send_start / recv_start:
 *   MPI_Isend / MPI_Irecv, completed by MPI_Test / MPI_Wait;
 * - PS push / pull: point-to-point with the server ranks, shard s the s-th contiguous slice; the
 *   server rank runs the hooks on arrival, as the simulated servers do;
 * - clock_wait / clock_advance: the workers' clocks kept by server 0, which answers a wait when
 *   the bound allows (`rounds` is not counted: a worker cannot know the slowest clock);
 * - bytes on the wire: the nominal volume of the algorithm the simulation charges for the same
 *   call (ring all-reduce, Bruck all-gather, binomial broadcast), not what OpenMPI's choice moved.
 * With real buffers, the step source's aggregate() no longer reads other replicas: the buffer
 * holds the SUM over the members when allreduce returns, and aggregate() divides it by the member
 * count into the worker's own replica (the entries its DLCP mask marks missing keep the local
 * value or count as zero, as now).
 */
#ifndef SS_SIM_EXCHANGE_H
#define SS_SIM_EXCHANGE_H

#include "sim/compute/compute.h"

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

typedef struct exchange_group exchange_group;     /* opaque: a set of workers exchanging together */
typedef struct exchange_request exchange_request; /* opaque: a non-blocking operation in flight */

/* What one call did, for this member. */
typedef struct exchange_result {
    double start_s;    /* clock (now) when the member called, seconds */
    double end_s;      /* clock when the member's part completed, seconds */
    double bytes_sent; /* bytes this member put on the wire in this call */
    double bytes_recv; /* bytes it received (PS pulls: the servers' replies) */
} exchange_result;

/* allreduce_buckets: the buckets do not run as a closed form. */
#define EXCHANGE_NOT_CLOSED (-1)

/* A clock value that never holds others back: a worker that has ended sets it. */
#define EXCHANGE_CLOCK_DONE (LONG_MAX / 2)

/* Parameter servers. The hooks run on the server side, at the moment a message arrives or a reply
 * leaves (simulated time, or on the server rank); they must not block. */
typedef struct exchange_ps_hooks {
    void *ctx; /* passed back to every hook */
    /* Server `server` received worker `worker`'s shard of the push of `round`; payload: the buf
     * given to ps_push (NULL in the simulation). May be NULL. */
    void (*on_push)(void *ctx, int server, int worker, int64_t round, const void *payload);
    /* Server `server` sends worker `worker` its shard for a pull of `round`. May be NULL. */
    void (*on_pull)(void *ctx, int server, int worker, int64_t round);
    /* Real buffers, for a backend that moves data (MPI; the simulation never calls them; may be
     * NULL). push_buffer: the full-length vector into which server `server` receives worker
     * `worker`'s push (its shard lands at the shard's slice) before on_push runs; pull_buffer:
     * the full-length vector whose shard slice a pull reply of server `server` carries, read
     * after on_pull ran. Shard s of a P-vector over K servers: elements [s b + min(s, r),
     * + b + (s < r)) with b = P / K, r = P % K. NULL under a synchronous PS: the server sums
     * the round's pushes into scratch of its own and every pull of the round gets that sum. */
    float *(*push_buffer)(void *ctx, int server, int worker);
    float *(*pull_buffer)(void *ctx, int server);
} exchange_ps_hooks;

typedef struct exchange_ps_opts {
    int n_servers; /* K >= 1: the model is sharded evenly over them */
    int async;     /* 0: a pull of round r waits for every worker's push of r (BSP over a PS);
                      1: a pull is answered at once (SSP/ASP: the policy bounds staleness) */
    exchange_ps_hooks hooks;
} exchange_ps_opts;

/* The workers an exchange hosted in this process (run_workers), and when they ended. */
typedef struct exchange_hosted {
    double end_s;     /* now() when the last of them ended */
    int first_worker; /* they are workers first_worker .. first_worker + n_here - 1 */
    int n_here;       /* 0 on a process that only serves (an MPI server rank) */
} exchange_hosted;

typedef struct exchange_ops {
    const char *name; /* "simgrid", "mpi" */

    /* The clock every time of a run is read on: seconds since the run started (simulated seconds
     * in the simulation). */
    double (*now)(void *self);

    /* Runs the run's `workers` workers: worker(ctx, w) for each worker w hosted here, until they
     * have all ended. The simulation: one actor per worker on its host, then the simulation
     * until every actor ended; MPI: this rank's worker, or the parameter servers' loop on a
     * server rank. Once per exchange; SS_EUSAGE when the workers do not match the exchange's. */
    int (*run_workers)(void *self, int workers, void (*worker)(void *ctx, int w), void *ctx,
                       exchange_hosted *out);

    /* Lets worker `worker`'s computation of a step take its time: `cost` priced by the compute
     * model `cfg` on the worker's host (sim/compute/compute.h). The simulation blocks the
     * worker's actor for the priced time (its FLOPs run on the host in flops mode); MPI, where
     * the computation took its real time since start_s (now() when the step source began it),
     * sleeps a straggler's extra: (cost->slowdown - 1) times that time. SS_EUSAGE for a cost the
     * model refuses. */
    int (*compute)(void *self, int worker, const sim_compute_cfg *cfg, const sim_step_cost *cost,
                   double start_s);
    /* May be NULL. The calling worker lets every other worker that is ready at this instant run
     * first (the simulation: the actor yields; no time passes). */
    void (*yield)(void *self);
    /* The model's per-layer times of a step on worker's host (sim_compute_layers), for the
     * modelled overlap of the backward pass with the buckets. MPI has no modelled host:
     * SS_EUSAGE (its layers take their real time). */
    int (*layer_times)(void *self, int worker, const sim_compute_cfg *cfg,
                       const sim_layer_cost *layers, int n, double *fwd_s, double *bwd_s,
                       double *optimizer_s);

    /* The group of workers members[0..m-1] (sorted by rank; NULL: all n workers, member = rank).
     * The same list gives the same group every time; every member may ask for it on its own.
     * Owned by the exchange. */
    exchange_group *(*group)(void *self, const int *members, int m);

    /* All-reduce (sum) of buf[0..count-1] among the group, `bytes` on the wire (the whole vector);
     * returns when this member holds the result. */
    int (*allreduce)(void *self, exchange_group *g, int member, float *buf, size_t count,
                     double bytes, exchange_result *r);
    /* The same, non-blocking: start returns at once (a call with invalid arguments completes at
     * once with its error); test is 1 once complete (never blocks); wait blocks until completion,
     * fills r (may be NULL), frees the request and returns the operation's status. A started
     * all-reduce counts as one call on the group (the ordering rule above); at most 16 may be in
     * flight on a group; a member's run one after the other in the order started (SimGrid: one
     * lane per member, as NCCL's stream; MPI: as the library progresses them, with a thread of
     * the backend testing them while the worker computes where MPI allows threads). */
    exchange_request *(*allreduce_start)(void *self, exchange_group *g, int member, float *buf,
                                         size_t count, double bytes);
    int (*test)(void *self, const exchange_request *rq);
    int (*wait)(void *self, exchange_request *rq, exchange_result *r);

    /* An overlapped step's n bucket all-reduces in closed form (may be NULL: MPI). Called by
     * every member once per step at the start of its backward pass, with the times (now's
     * clock) its buckets of bytes[0..n-1] will be ready, in the order they start; blocks until
     * every member has called, then gives *end_s, when its last bucket completes (the caller
     * lets time pass until then), and the bytes it sends. EXCHANGE_NOT_CLOSED, at once and
     * alike on every member, where the all-reduces do not run as a closed form (then the
     * caller starts them one by one). The simulation: sim_allreduce_buckets. */
    int (*allreduce_buckets)(void *self, exchange_group *g, int member, int n,
                             const double *ready_s, const double *bytes, double *end_s,
                             double *bytes_sent);

    /* All-gather: every member contributes `count` bytes at mine and receives everybody's,
     * member i's at all[i * count] (all: count * members bytes); `bytes` is the wire size of one
     * member's part (SelSync's flags: 1). mine/all may be NULL (count then 0). */
    int (*allgather)(void *self, exchange_group *g, int member, const void *mine, void *all,
                     size_t count, double bytes, exchange_result *r);

    /* Broadcast of buf[0..count-1] (`bytes` on the wire) from member `root` to the group. */
    int (*broadcast)(void *self, exchange_group *g, int member, int root, float *buf, size_t count,
                     double bytes, exchange_result *r);

    /* Point to point within a group (data injection): send returns when the data has arrived;
     * recv when the message from member `src` has. Matched in order per pair. buf: the data
     * (count floats), or NULL. */
    int (*send)(void *self, exchange_group *g, int member, int dst, const float *buf, size_t count,
                double bytes, exchange_result *r);
    int (*recv)(void *self, exchange_group *g, int member, int src, float *buf, size_t count,
                double bytes, exchange_result *r);
    /* The same, non-blocking: start returns at once and the request completes through test /
     * wait (r: start_s, end_s = when completion was observed, the message's bytes). Messages
     * in flight together share the network as concurrent flows do (a sender's fan-out costs what
     * its links allow, not one latency per message). Matched in start order per ordered pair,
     * separately from the blocking send / recv. An invalid call completes at once with its
     * error (SS_EUSAGE). */
    exchange_request *(*send_start)(void *self, exchange_group *g, int member, int dst,
                                    const float *buf, size_t count, double bytes);
    exchange_request *(*recv_start)(void *self, exchange_group *g, int member, int src, float *buf,
                                    size_t count, double bytes);

    /* Starts the parameter servers; once per run, before any worker runs. */
    int (*ps_start)(void *self, const exchange_ps_opts *o);
    /* Worker `worker` pushes buf[0..count-1] (`bytes` in all, sharded over the servers) for
     * `round`; returns when every shard has arrived and the servers' on_push hooks ran. */
    int (*ps_push)(void *self, int worker, const float *buf, size_t count, double bytes,
                   int64_t round, exchange_result *r);
    /* Worker `worker` pulls `bytes` (sharded) for `round` into buf; returns when every shard came
     * back. r->bytes_sent: the requests, r->bytes_recv: the replies. */
    int (*ps_pull)(void *self, int worker, float *buf, size_t count, double bytes, int64_t round,
                   exchange_result *r);
    /* Push then pull of the same round (a synchronous step over the servers); r covers both. */
    int (*ps_push_pull)(void *self, int worker, float *buf, size_t count, double bytes,
                        int64_t round, exchange_result *r);

    /* SSP's staleness bound over the workers' clocks (steps completed, 0 at the start). Blocks
     * worker `worker` while its clock - min_j clock_j > staleness (staleness < 0: never) and
     * returns that gap at the moment it goes on. */
    long (*clock_wait)(void *self, int worker, long staleness);
    /* Sets the worker's clock to `clock` (EXCHANGE_CLOCK_DONE when it ends) and wakes the workers
     * waiting in clock_wait. If the update makes the slowest clock equal `clock`, increments
     * *rounds (may be NULL) before anybody else sees the new clocks, so that a count read by
     * other workers (evaluations) is never behind the clocks. */
    void (*clock_advance)(void *self, int worker, long clock, long *rounds);
} exchange_ops;

/* One exchange of a run: the backend's operations and state. */
typedef struct exchange {
    const exchange_ops *ops;
    void *self;
} exchange;

#endif
