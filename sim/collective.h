/* Collectives as the real messages of their algorithms over SimGrid mailboxes.
 *
 * Every member actor of a group calls the collective itself, with its member index and the
 * message size; the call returns at the simulated moment THIS member's part is complete, so the
 * caller acts then (the emulator averages the replicas at that moment). A worker actor of a
 * BSP policy, for instance:
 *
 *     sim_comm *world = sim_cluster_world(cluster);
 *     sim_coll_opts co = {.algo = SIM_ALLREDUCE_RING};
 *     for (step...) {
 *         sim_compute_step(&cc, &cost, NULL);                         // compute.h
 *         sim_coll_result r;
 *         sim_allreduce(world, rank, grad_bytes, &co, &r);            // returns at r.end_s
 *         src->aggregate(...); bytes_sent += r.bytes_sent;
 *     }
 *
 * Rules (as in MPI): every member of a group calls the same collectives, in the same order, with
 * the same size and options. Each member numbers its calls on a group; the k-th call of every
 * member is one instance, and its mailboxes are named "c<group>.<k mod 16>.<src>.<dst>" (member
 * indices): messages on one name are matched first in, first out, and every member posts its
 * instances in order, so consecutive and concurrent collectives (other groups, or up to 16 async
 * requests in flight on the same group) never cross-talk. Disjoint groups run concurrently and
 * share the network only where their routes share links. (SimGrid keeps every mailbox until the
 * process exits: the window bounds them to 16 per pair of members that talk.)
 *
 * Sizes are doubles in bytes (> 0; SimGrid moves whole bytes: parts are rounded to the nearest
 * byte and never below 1). Invalid arguments (member out of range, size <= 0) return SS_EUSAGE.
 */
#ifndef SS_SIM_COLLECTIVE_H
#define SS_SIM_COLLECTIVE_H

#include <simgrid/forward.h>
#include <stddef.h>

typedef struct sim_comm sim_comm; /* opaque: a group of members on hosts */

/* A group of `size` members, member i on hosts[i] (hosts may repeat). Any process-wide unique
 * object: groups of a cluster are better made with sim_cluster_world()/sim_cluster_group(). */
sim_comm *sim_comm_create(int size, const sg_host_t *hosts);
void sim_comm_destroy(sim_comm *c); /* after the simulation, or when no member uses it any more */
int sim_comm_size(const sim_comm *c);
sg_host_t sim_comm_host(const sim_comm *c, int member);
/* Total bytes sent by `member` in all collectives of this group so far. */
double sim_comm_bytes_sent(const sim_comm *c, int member);

typedef enum sim_allreduce_algo {
    SIM_ALLREDUCE_RING = 0,         /* reduce-scatter then all-gather: 2(N-1) steps of M/N bytes */
    SIM_ALLREDUCE_RING_COARSE,      /* large N: per phase one flow of (N-1)/N.M bytes to the ring
                                       neighbour, plus a wait for the step latencies it stands
                                       for ((N-1) x the slowest neighbour route in all, as the
                                       message-level ring pays): same time as RING on
                                       platforms of equal bandwidths */
    SIM_ALLREDUCE_HALVING_DOUBLING, /* Rabenseifner: recursive halving reduce-scatter, recursive
                                       doubling all-gather; N not a power of two: the first 2r
                                       ranks fold pairwise (even sends M to odd) before, and odd
                                       sends the result back after */
    SIM_ALLREDUCE_TREE /* binary-tree reduce to member 0 (heap order: children 2i+1, 2i+2; a node
                          receives from its children one after the other) then broadcast down
                          the same tree; segment_bytes > 0 pipelines it */
} sim_allreduce_algo;

/* "ring", "ring-coarse", "hd" (or "halving-doubling"), "tree"; SS_EUSAGE naming `option`. */
int sim_allreduce_algo_parse(const char *option, const char *text, sim_allreduce_algo *out);
const char *sim_allreduce_algo_name(sim_allreduce_algo a);
/* The algorithms' names joined by `sep` into buf ("ring, ring-coarse, hd, tree"): for option
 * choices and messages, so that a new algorithm needs only its row in collective.c. */
const char *sim_allreduce_algo_names(const char *sep, char *buf, size_t n);

typedef struct sim_coll_opts {
    sim_allreduce_algo algo;
    double segment_bytes; /* > 0: messages are cut into segments of at most this size: the
                             tree pipelines them; the other algorithms post the segments of a
                             step together as separate messages (at most 32 per transfer).
                             0: whole messages */
} sim_coll_opts;

typedef struct sim_coll_result {
    double start_s;    /* simulated clock when the member called */
    double end_s;      /* simulated clock when the member's part completed */
    double bytes_sent; /* by this member in this call */
    double bytes_recv; /* by this member in this call */
} sim_coll_result;

/* All-reduce of `bytes` (the whole vector M) in group c, called by member `member`. Returns at the
 * moment this member holds the full result. `o` NULL = ring, no segmentation. `r` may be NULL. */
int sim_allreduce(sim_comm *c, int member, double bytes, const sim_coll_opts *o,
                  sim_coll_result *r);

/* All-gather: every member contributes `bytes_per_member` (SelSync's flags: a few bytes) and
 * returns holding everybody's. Bruck's algorithm: ceil(log2 N) steps for any N, latency-bound for
 * small sizes; step k sends min(2^k, N - 2^k) blocks to member - 2^k. */
int sim_allgather(sim_comm *c, int member, double bytes_per_member, sim_coll_result *r);

/* Broadcast of `bytes` from member `root` down a binomial tree (ceil(log2 N) rounds). */
int sim_broadcast(sim_comm *c, int member, int root, double bytes, sim_coll_result *r);

/* Point-to-point over the group's mailboxes (data injection, custom protocols): send returns when
 * the data has arrived; recv returns when the message from `src` arrived. Matched in order. */
int sim_send(sim_comm *c, int member, int dst, double bytes, sim_coll_result *r);
int sim_recv(sim_comm *c, int member, int src, double bytes, sim_coll_result *r);

/* ---- asynchronous form: start now, get a callback at completion, wait later ---- */

typedef struct sim_request sim_request; /* opaque */

/* Called inside the simulation at the simulated moment the operation completes (r->end_s ==
 * simulated clock), from a helper actor on the member's host: it may not block on the network. */
typedef void (*sim_done_fn)(void *ctx, int member, const sim_coll_result *r);

/* Starts the all-reduce in a helper actor on the member's host and returns at once. `done` (may
 * be NULL) is called at completion. The request must be waited for (sim_request_wait). An async
 * all-reduce counts as one call of the member on the group (the numbering rule above). */
sim_request *sim_allreduce_async(sim_comm *c, int member, double bytes, const sim_coll_opts *o,
                                 sim_done_fn done, void *ctx);
/* 1 if the request has completed (never blocks). */
int sim_request_test(const sim_request *rq);
/* Blocks the calling actor until completion; returns the operation's status, fills r (may be
 * NULL) and frees the request. */
int sim_request_wait(sim_request *rq, sim_coll_result *r);

#endif
