/* The options of the collectives: which all-reduce algorithm, which NCCL protocol, segments and
 * channels; their names and parsing. Plain data, no SimGrid: the policies' configuration holds
 * them, and the collectives (collective.h) run them.
 *
 *     sim_coll_opts co = {.algo = SIM_ALLREDUCE_RING, .channels = 1};
 *     if (sim_allreduce_algo_parse("--collective", "dbtree", &co.algo) != SS_OK) ...
 */
#ifndef SS_SIM_NET_COLL_OPTS_H
#define SS_SIM_NET_COLL_OPTS_H

#include <stddef.h>

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
                          the fastest wins; docs/NETWORK.md, "Collectives"), and their closed forms
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
/* 1 when `requested` takes more than one channel: ring (C rings), dbtree (C trees) and auto. */
int coll_takes_channels(sim_allreduce_algo requested);
/* SS_OK, or SS_EUSAGE when `channels` > 1 does not apply to the exchange named `collective`
 * (algo, or a parameter server when ps) */
int coll_check_channels(int channels, sim_allreduce_algo algo, int ps, const char *collective);

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

#endif
