/* Collectives as the real messages of their algorithms over SimGrid mailboxes.
 *
 * Every member actor of a group calls the collective itself, with its member index and the
 * message size; the call returns at the simulated moment THIS member's part is complete, so the
 * caller acts then (the emulator averages the replicas at that moment). A worker actor of a
 * BSP policy, for instance:
 *
 *     sim_group *world = sim_cluster_world(cluster);
 *     sim_coll_opts co = {.algo = SIM_ALLREDUCE_RING};
 *     for (step...) {
 *         sim_compute_step(&cc, &cost, NULL);                 // compute_charge.h
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

#include "sim/net/coll/coll_opts.h"

#include <simgrid/forward.h>
#include <stddef.h>

typedef struct sim_group sim_group; /* opaque: a group of members on hosts */

/* A group of `size` members, member i on hosts[i] (hosts may repeat). Any process-wide unique
 * object: groups of a cluster are better made with sim_cluster_world()/sim_cluster_group(). */
sim_group *sim_group_create(int size, const sg_host_t *hosts);
void sim_group_destroy(sim_group *c); /* after the simulation, or when no member uses it any more */
int sim_group_size(const sim_group *c);

/* Per-call cost of the NCCL-style all-reduces under the Simple protocol (see sim_nccl_protocol):
 * Ring 8.4 us (ring, ring channels, hier and their closed forms), Tree 0 us (dbtree); and the
 * per-step latency of a Simple ring step by hop class. */
#define SIM_NCCL_RING_BASE_LATENCY_S  8.4e-6
#define SIM_NCCL_TREE_BASE_LATENCY_S  0.0
#define SIM_NCCL_SIMPLE_NVLINK_STEP_S 3.4e-6
#define SIM_NCCL_SIMPLE_PCI_STEP_S    5.7e-6
#define SIM_NCCL_SIMPLE_NET_STEP_S    9.6e-6

/* Most channels of a multi-channel ring. */
#define SIM_MAX_CHANNELS 16
/* From this many members on, auto picks the closed forms (ring-coarse, hier-coarse) and the
 * coarse all-gather: the message-level forms cost O(N) messages per member per call. */
#define SIM_COARSE_MIN_MEMBERS 512

/* SIM_COARSE_MIN_MEMBERS, unless set otherwise for this process (tests: the closed forms on
 * small groups). */
int sim_coll_coarse_min_members(void);
void sim_coll_set_coarse_min_members(int members);

/* The algorithm auto would run for an all-reduce of `bytes` on group c with options o (o->algo
 * may be anything: it is ignored). Call after the platform is loaded. */
sim_allreduce_algo sim_allreduce_auto_pick(sim_group *c, double bytes, const sim_coll_opts *o);
/* The protocol an NCCL-style algorithm `algo` (resolved: not auto) runs an all-reduce of `bytes`
 * with: o->protocol if named, else the one auto's estimates prefer; SIM_PROTOCOL_AUTO (none) for
 * the plain algorithms. */
sim_nccl_protocol sim_allreduce_protocol(sim_group *c, sim_allreduce_algo requested,
                                         sim_allreduce_algo algo, double bytes,
                                         const sim_coll_opts *o);
/* The channels auto's ring runs with: o->channels when above 1, else, on groups spanning
 * several multi-GPU nodes, one per NIC of a node (as NCCL opens at least one channel per NIC),
 * else 1. */
int sim_allreduce_auto_channels(sim_group *c, const sim_coll_opts *o);
/* The channels of the algorithm auto picked: its ring's (above), or its tree's: o->channels
 * trees when above 2, else the two of the double binary tree (the form the network references
 * were checked with; docs/NETWORK.md). */
int sim_allreduce_auto_algo_channels(sim_group *c, const sim_coll_opts *o, sim_allreduce_algo a);

/* Whether options o can run on group c (before the simulation starts): hier and hier-coarse need
 * a group where some node holds more than one member; channels 1..SIM_MAX_CHANNELS. SS_EUSAGE
 * saying why not, naming `option`. */
int sim_coll_check(sim_group *c, const sim_coll_opts *o, const char *option);
/* The part of sim_coll_check() a platform's description decides before any simulation: hier
 * and hier-coarse need multi-GPU nodes (flat: every worker a node of its own). */
int sim_coll_check_flat(sim_allreduce_algo algo, int flat, const char *option);

typedef struct sim_coll_result {
    double start_s;    /* simulated clock when the member called */
    double end_s;      /* simulated clock when the member's part completed */
    double bytes_sent; /* by this member in this call */
    double bytes_recv; /* by this member in this call */
} sim_coll_result;

/* All-reduce of `bytes` (the whole vector M) in group c, called by member `member`. Returns at the
 * moment this member holds the full result. `o` NULL = ring, no segmentation. `r` may be NULL. */
int sim_allreduce(sim_group *c, int member, double bytes, const sim_coll_opts *o,
                  sim_coll_result *r);

/* All-gather: every member contributes `bytes_per_member` (SelSync's flags: a few bytes) and
 * returns holding everybody's. Bruck's algorithm: ceil(log2 N) steps for any N, latency-bound for
 * small sizes; step k sends min(2^k, N - 2^k) blocks to member - 2^k. */
int sim_allgather(sim_group *c, int member, double bytes_per_member, sim_coll_result *r);

/* The same all-gather where opts ask for it in closed form (o->algo auto, ring-coarse or
 * hier-coarse, and at least SIM_COARSE_MIN_MEMBERS members), else Bruck's messages. Closed form:
 * every member waits for the last to arrive, then for sum over Bruck's steps k of (the largest
 * route latency of step k's pairs x the model's latency factor + the step's bytes / the smallest
 * route bandwidth); on uniform platforms the message-level time within 1 %. */
int sim_allgather_opts(sim_group *c, int member, double bytes_per_member, const sim_coll_opts *o,
                       sim_coll_result *r);
/* The closed form itself, whatever the group's size. */
int sim_allgather_coarse(sim_group *c, int member, double bytes_per_member, sim_coll_result *r);

/* Broadcast of `bytes` from member `root` down a binomial tree (ceil(log2 N) rounds). */
int sim_broadcast(sim_group *c, int member, int root, double bytes, sim_coll_result *r);

/* Point-to-point over the group's mailboxes (data injection, custom protocols): send returns when
 * the data has arrived; recv returns when the message from `src` arrived. Matched in order. */
int sim_send(sim_group *c, int member, int dst, double bytes, sim_coll_result *r);
int sim_recv(sim_group *c, int member, int src, double bytes, sim_coll_result *r);

/* ---- the buckets of an overlapped step in closed form ---- */

/* What sim_allreduce_buckets returns where the all-reduces do not run as a closed form. */
#define SIM_NOT_CLOSED (-1)

/* An overlapped step's n bucket all-reduces (bytes[0..n-1], in the order started) in closed
 * form, called by every member once per step at the start of its backward pass with the
 * simulated times ready_s[b] at which its bucket b will be ready. Blocks until every member has
 * called (they are all needed for any bucket to complete), then gives the time at which this
 * member's last bucket completes, and the bytes it sends: bucket b starts when the last member
 * has it ready and bucket b - 1 is done (one lane, as the asynchronous form runs them), and
 * takes
 * - ring-coarse (o->algo ring-coarse, or auto where it resolves to ring-coarse) on a flat
 *   group: its time as arithmetic, the slowest member's when all start together on a network
 *   its own flows alone load: per phase the merged flow to the ring neighbour as the network
 *   model charges it (the route's latency and bandwidth with the model's factors, the TCP
 *   window, the protocol's cap, the share of the links it crosses with the other members'
 *   flows and, under LV08's cross traffic, with their acknowledgements), then the wait for the
 *   further step latencies;
 * - ring-coarse on multi-GPU nodes, hier-coarse (or auto resolving to it), and auto's double
 *   binary tree from sim_coll_coarse_min_members() members on: the time the algorithm took the
 *   first time this size ran, every member starting together (that call runs it, and every
 *   member waits for the slowest), for every later call of the size.
 * The caller lets time pass until the end. SIM_NOT_CLOSED, before blocking and alike on every
 * member, where some bucket has neither form (ns-3, segments, the other algorithms); counts as n
 * calls of the member on the group. */
int sim_allreduce_buckets(sim_group *c, int member, int n, const double *ready_s,
                          const double *bytes, const sim_coll_opts *o, double *end_s,
                          double *bytes_sent);

/* ---- asynchronous form: start now, get a callback at completion, wait later ---- */

typedef struct sim_request sim_request; /* opaque */

/* Called inside the simulation at the simulated moment the operation completes (r->end_s ==
 * simulated clock), from a helper actor on the member's host: it may not block on the network. */
typedef void (*sim_done_fn)(void *ctx, int member, const sim_coll_result *r);

/* Starts the all-reduce and returns at once. The member's asynchronous calls run one after the
 * other in the order started (one lane, as NCCL runs the calls of one stream), in a helper actor
 * on the member's host. `done` (may be NULL) is called at completion. The request must be waited
 * for (sim_request_wait). An async all-reduce counts as one call of the member on the group (the
 * numbering rule above). */
sim_request *sim_allreduce_async(sim_group *c, int member, double bytes, const sim_coll_opts *o,
                                 sim_done_fn done, void *ctx);
/* 1 if the request has completed (never blocks). */
int sim_request_test(const sim_request *rq);
/* Blocks the calling actor until completion; returns the operation's status, fills r (may be
 * NULL) and frees the request. */
int sim_request_wait(sim_request *rq, sim_coll_result *r);

#endif
