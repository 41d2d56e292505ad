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
    SIM_ALLREDUCE_TREE,        /* binary-tree reduce to member 0 (heap order: children 2i+1, 2i+2; a
                                  node receives from its children one after the other) then broadcast
                                  down the same tree; segment_bytes > 0 pipelines it */
    SIM_ALLREDUCE_HIER,        /* NCCL-style hierarchical (topology.h gives the nodes): ring
                                  reduce-scatter inside each node (G-1 steps of M/G), ring all-reduce of
                                  the member's 1/G shard among the members of the same local index on
                                  every node (its rail: 2(K-1) steps of M/(G K) through its own NIC),
                                  ring all-gather inside the node (G-1 steps of M/G). Nodes holding
                                  unequal member counts: the ring. One member per node: the ring */
    SIM_ALLREDUCE_HIER_COARSE, /* hier with every ring phase as ring-coarse does it: one flow
                                  of (n-1)/n of the phase's bytes to the neighbour plus a wait for
                                  the n-2 further step latencies (the largest hop of that phase
                                  over the whole group) */
    SIM_ALLREDUCE_DBTREE,      /* NCCL's double binary tree: two binary trees in which every member
                                  is an inner node in at most one (in-order tree on positions 1..N,
                                  the second mirrored (N even) or shifted by one (N odd)), each
                                  reducing then broadcasting half of the vector, both at once; a
                                  member receives its children's parts together and sends to its
                                  children together; segment_bytes > 0 pipelines each tree */
    SIM_ALLREDUCE_RECURSIVE_DOUBLING, /* "rd": log2 P steps of the whole vector with the partner
                                         at distance 2^s (P the largest power of two <= N; the
                                         others fold in and out as for hd) */
    SIM_ALLREDUCE_AUTO /* picks per call among dbtree, ring (sim_allreduce_auto_channels) and, on
                          groups of multi-GPU nodes, hier, the one of least alpha-beta estimate (the
                          tuning rule of NCCL: per algorithm a latency plus size / bandwidth,
                          the fastest wins; README "Collectives"), and their closed forms
                          from SIM_COARSE_MIN_MEMBERS members on: ring-coarse on flat groups,
                          hier-coarse on nodes (where ring-coarse does not hold), unless dbtree */
} sim_allreduce_algo;

/* "ring", "ring-coarse", "hd" (or "halving-doubling"), "tree", "hier", "hier-coarse", "dbtree",
 * "rd", "auto"; SS_EUSAGE naming `option`. */
int sim_allreduce_algo_parse(const char *option, const char *text, sim_allreduce_algo *out);
const char *sim_allreduce_algo_name(sim_allreduce_algo a);
/* The algorithms' names joined by `sep` into buf ("ring, ring-coarse, hd, tree"): for option
 * choices and messages, so that a new algorithm needs only its row in collective.c. */
const char *sim_allreduce_algo_names(const char *sep, char *buf, size_t n);

/* NCCL's protocols, as its cost model (NVIDIA/nccl 2.7.5, src/graph/tuning.cc) prices them; they
 * apply to the NCCL-style all-reduces (auto, hier, hier-coarse, dbtree), not to ring, ring-coarse,
 * rd, tree or hd, whose messages stay plain. Per call a base latency (baseLat), per step a hardware
 * latency by the hop's class, NVLink, PCI or network (hwLat), and every message's rate capped at
 * a fraction of its route's bandwidth:
 *   LL      8-byte stores of 4 data bytes and a flag: ring 1/4 of the bandwidth, tree 1/3.8;
 *           base 3.6 us (ring), 4.4 us (tree); per step 0.47 / 1.0 / 2.7 us (ring), 0.52 / 1.0 /
 *           5.0 us (tree)
 *   LL128   128-byte lines with 8 flag bytes: ring 0.92 (0.7 with one GPU per node), tree 7/9
 *           (one node) or 0.915; base 10.0 us (ring), 4.4 us (tree); per step 1.9 / 2.5 / 4.0 us
 *           (ring), 1.2 / 1.9 / 8.5 us (tree)
 *   Simple  whole buffers and one flag per step: full bandwidth; base 8.4 us (ring), 0 (tree); per
 *           step 3.4 / 5.7 / 9.6 us (ring); the tree's figure (the latency of a 256 KB chunk,
 *           transfer included) is not added, since its messages pay their own transfer.
 * AUTO picks, with the algorithm, the protocol of least estimate among LL and Simple (NCCL 2.7.5
 * enables LL128 by default on NVLink Volta and Ampere only; name it to use it). The links'
 * latencies are charged as well: they are the wire's, the step latencies the protocol's. */
typedef enum sim_nccl_protocol {
    SIM_PROTOCOL_AUTO = 0,
    SIM_PROTOCOL_LL = 1,
    SIM_PROTOCOL_LL128 = 2,
    SIM_PROTOCOL_SIMPLE = 3
} sim_nccl_protocol;

/* "auto", "LL", "LL128", "Simple" (case-insensitive); SS_EUSAGE naming `option`. */
int sim_nccl_protocol_parse(const char *option, const char *text, sim_nccl_protocol *out);
/* 1 for the NCCL-style algorithms, which take a protocol: auto, hier, hier-coarse, dbtree. */
int coll_is_nccl_algo(sim_allreduce_algo a);
/* 1 when an all-reduce `requested` runs under NCCL protocol p's costs: an NCCL-style algorithm,
 * or ring and ring-coarse under a named protocol (NCCL's ring, as NCCL before its trees ran
 * every all-reduce); a ring under auto keeps plain messages. */
int coll_takes_protocol(sim_allreduce_algo requested, sim_nccl_protocol p);
const char *sim_nccl_protocol_name(sim_nccl_protocol p);

typedef struct sim_coll_opts {
    sim_allreduce_algo algo;
    double segment_bytes;       /* > 0: messages are cut into segments of at most this size: the
                                   tree pipelines them; the other algorithms post the segments of a
                                   step together as separate messages (at most 32 per transfer).
                                   0: whole messages */
    int channels;               /* ring: the vector split over this many rings run at once (0 or 1:
                                   one ring, member order). On nodes, channel c's ring visits the
                                   nodes in order and, inside each, starts at local index c G / C:
                                   consecutive channels enter and leave the nodes through different
                                   GPUs and NICs, as NCCL's rings do. Messages are whole per channel */
    sim_nccl_protocol protocol; /* the NCCL-style algorithms (auto, hier, hier-coarse, dbtree):
                                   SIM_PROTOCOL_AUTO (0) picks LL or Simple per call by estimate */
} sim_coll_opts;

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

/* The algorithm auto would run for an all-reduce of `bytes` on group c with options o (o->algo
 * may be anything: it is ignored). Call after the platform is loaded. */
sim_allreduce_algo sim_allreduce_auto_pick(sim_comm *c, double bytes, const sim_coll_opts *o);
/* The protocol an NCCL-style algorithm `algo` (resolved: not auto) runs an all-reduce of `bytes`
 * with: o->protocol if named, else the one auto's estimates prefer; SIM_PROTOCOL_AUTO (none) for
 * the plain algorithms. */
sim_nccl_protocol sim_allreduce_protocol(sim_comm *c, sim_allreduce_algo requested,
                                         sim_allreduce_algo algo, double bytes,
                                         const sim_coll_opts *o);
/* The channels auto's ring runs with: o->channels when above 1, else, on groups spanning
 * several multi-GPU nodes, one per NIC of a node (as NCCL opens at least one channel per NIC),
 * else 1. */
int sim_allreduce_auto_channels(sim_comm *c, const sim_coll_opts *o);

/* Whether options o can run on group c (before the simulation starts): hier and hier-coarse need
 * a group where some node holds more than one member; channels 1..SIM_MAX_CHANNELS. SS_EUSAGE
 * saying why not, naming `option`. */
int sim_coll_check(sim_comm *c, const sim_coll_opts *o, const char *option);
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
int sim_allreduce(sim_comm *c, int member, double bytes, const sim_coll_opts *o,
                  sim_coll_result *r);

/* All-gather: every member contributes `bytes_per_member` (SelSync's flags: a few bytes) and
 * returns holding everybody's. Bruck's algorithm: ceil(log2 N) steps for any N, latency-bound for
 * small sizes; step k sends min(2^k, N - 2^k) blocks to member - 2^k. */
int sim_allgather(sim_comm *c, int member, double bytes_per_member, sim_coll_result *r);

/* The same all-gather where opts ask for it in closed form (o->algo auto, ring-coarse or
 * hier-coarse, and at least SIM_COARSE_MIN_MEMBERS members), else Bruck's messages. Closed form:
 * every member waits for the last to arrive, then for sum over Bruck's steps k of (the largest
 * route latency of step k's pairs x the model's latency factor + the step's bytes / the smallest
 * route bandwidth); on uniform platforms the message-level time within 1 %. */
int sim_allgather_opts(sim_comm *c, int member, double bytes_per_member, const sim_coll_opts *o,
                       sim_coll_result *r);
/* The closed form itself, whatever the group's size. */
int sim_allgather_coarse(sim_comm *c, int member, double bytes_per_member, sim_coll_result *r);

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

/* Starts the all-reduce and returns at once. The member's asynchronous calls run one after the
 * other in the order started (one lane, as NCCL runs the calls of one stream), in a helper actor
 * on the member's host. `done` (may be NULL) is called at completion. The request must be waited
 * for (sim_request_wait). An async all-reduce counts as one call of the member on the group (the
 * numbering rule above). */
sim_request *sim_allreduce_async(sim_comm *c, int member, double bytes, const sim_coll_opts *o,
                                 sim_done_fn done, void *ctx);
/* 1 if the request has completed (never blocks). */
int sim_request_test(const sim_request *rq);
/* Blocks the calling actor until completion; returns the operation's status, fills r (may be
 * NULL) and frees the request. */
int sim_request_wait(sim_request *rq, sim_coll_result *r);

#endif
