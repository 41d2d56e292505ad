/* Internal to the collectives (collective.c and coll_*.c): the group's state, one member's call,
 * and the message primitives every algorithm is written with. */
#ifndef SS_SIM_COLLECTIVE_INTERNAL_H
#define SS_SIM_COLLECTIVE_INTERNAL_H

#include <stdint.h>

#include <simgrid/forward.h>

#include "sim/net/coll/collective.h"
#include "sim/net/topology.h"

/* The slowest of a set of hops as the network model charges a message of a given size: the
 * TCP routes' raw latency and bandwidth (their factors depend on the size under SMPI), the
 * others' with their fixed factors applied. */
typedef struct hop_set {
    int ready;
    double tcp_lat_s, tcp_bw_Bps;            /* largest raw latency, smallest raw bandwidth (TCP) */
    double other_lat_s, other_bw_Bps;        /* the same, factors applied (other fabrics) */
    double tcp_shared_Bps, other_shared_Bps; /* hop_set_add_concurrent: the smallest share */
    int hw_max;                              /* the slowest hop class (sim_hw_class) */
} hop_set;

void hop_set_clear(hop_set *h);
void hop_set_add(hop_set *h, sg_host_t src, sg_host_t dst);
/* Adds n hops that run at once (hop i: src[i] -> dst[i]) and records, besides each route's own
 * bandwidth, the share each gets where they cross the same links: a shared link crossed by k of
 * them gives each 1/k of its bandwidth (max-min fairness with equal demands; a FATPIPE link
 * gives each all of it). Two GPUs behind one PCIe switch uplink, G GPUs on one NIC: the hops of
 * a ring phase there share those links. */
void hop_set_add_concurrent(hop_set *h, const sg_host_t *src, const sg_host_t *dst, int n);
double hop_set_latency_s(const hop_set *h, double bytes);
double hop_set_bandwidth_Bps(const hop_set *h, double bytes);
/* The smallest share of hop_set_add_concurrent's hops (the route's own bandwidth for hops added
 * one by one). */
double hop_set_shared_bandwidth_Bps(const hop_set *h, double bytes);
/* One route's latency and bandwidth as charged for a message of `bytes`. */
double coll_hop_latency_s(sg_host_t src, sg_host_t dst, double bytes);
double coll_hop_bandwidth_Bps(sg_host_t src, sg_host_t dst, double bytes);

/* A member of a double binary tree has a parent and up to three children: the next GPU of its
 * node's chain and, at the chain's head, two nodes' heads. */
#define TREE_LINKS 4

/* Mailboxes already looked up, by (channel, instance slot, src, dst): an open-addressing table,
 * since SimGrid finds a mailbox by its name (a string built and hashed for every message). */
typedef struct mailbox_cache {
    uint64_t *keys; /* 0: empty */
    sg_mailbox_t *boxes;
    size_t cap, used; /* cap: a power of two */
} mailbox_cache;

typedef struct async_lane async_lane; /* collective.c */

struct sim_group {
    int id;             /* unique in the process: names the group's mailboxes */
    int size;           /* members */
    sg_host_t *hosts;   /* (size) */
    uint64_t *next_seq; /* (size) per member: number of its next collective call */
    double *bytes_sent; /* (size) per member, all calls */
    hop_set ring_hops;  /* the hops between ring neighbours (ready: read) */
    mailbox_cache boxes;
    /* read on first use by the node-aware algorithms (collective_nccl.c) */
    sim_topology *topo;
    int channel_count;                /* channels of the orders below (0: none yet) */
    int *channel_next, *channel_prev; /* (channel_count * size) ring neighbours per channel */
    /* dbtree of C trees: per tree (size * TREE_LINKS), parent then children (-1); NULL: not yet */
    int *tree_links[SIM_MAX_CHANNELS + 1];
    hop_set intra_hops, rail_hops; /* hier-coarse: hops of the intra-node and rail rings */
    double gather_coarse_s;        /* all-gather closed form for 1 byte per member (< 0) */
    double gather_coarse_bytes;    /* the bytes per member gather_coarse_s is for */
    sg_bar_t barrier;              /* coarse all-gather: every member arrived */
    int est_ready;                 /* auto: the hop sets below are read */
    hop_set est_hops[3];           /* auto: ring hops, intra-node hops, rail hops */
    async_lane **lanes;            /* (size) per member: its asynchronous calls (NULL: none yet) */
    struct sim_helper_pool **helpers; /* (size) per member: helper actors (dbtree's second tree) */
    struct coll_pipe *pipe;           /* coll_pipeline.c: the bucket pipelines in closed form */
    void (*pipe_free)(sim_group *c);  /* frees `pipe` (set with it: coll_pipeline.c calls the
                                         collectives, so they do not call it back) */
};

/* The state of one member in one collective instance. */
typedef struct call {
    sim_group *c;
    int member;
    uint64_t seq;     /* instance number (same on every member) */
    double seg_bytes; /* 0 = whole messages */
    int channel;      /* separates concurrent rings or trees of one instance (0..255) */
    /* the NCCL protocol of the call (sim_nccl_protocol; SIM_PROTOCOL_AUTO: plain messages) and
     * what it costs: a rate cap of proto_frac x the route's bandwidth, a latency per step */
    int proto;
    int family; /* NCCL_FAMILY_TREE or NCCL_FAMILY_RING */
    double proto_frac;
    int hw_dst, hw_class; /* the hop class of the last destination looked up (-1: none) */
    sim_coll_result res;  /* accumulated for the caller */
} call;

enum { NCCL_FAMILY_TREE = 0, NCCL_FAMILY_RING = 1 };

/* Pending transfers of one step, waited together. */
#define STEP_MAX 64
typedef struct step {
    sg_comm_t comms[STEP_MAX];
    void *slots[STEP_MAX];
    int n;
} step;

sg_mailbox_t coll_mailbox(call *k, int src, int dst);
long coll_wire_bytes(double bytes);
double coll_part_bytes(double bytes, int i, int n);
void coll_post_send(call *k, step *s, int dst, double bytes);
void coll_post_recv(call *k, step *s, int src, double bytes);
void coll_step_wait(step *s);
void coll_send_wait(call *k, int dst, double bytes);
/* One exchange: send to dst and receive from src at the same time (-1: none), wait for both. */
void coll_exchange(call *k, int dst, double send_bytes, int src, double recv_bytes);

/* The protocol's latency of one step to member dst (0 without a protocol), and a pause for it. */
double coll_proto_step_s(call *k, int dst);
void coll_proto_pause(call *k, int dst);
/* The protocol's latency of one step over the slowest hop of a set; its rate cap fraction. */
double coll_proto_set_step_s(const call *k, const hop_set *h);
/* Sets the call's protocol (sim_nccl_protocol, SIM_PROTOCOL_AUTO: none) for algorithm family
 * fam on a group of `per_node` members per node. */
void coll_proto_set(call *k, int proto, int fam, int per_node, int n_nodes);
/* The base latency of a call of protocol proto in family fam. */
double coll_proto_base_s(int proto, int fam);
/* The rate cap of protocol proto in family fam on `per_node` members per node (a fraction of a
 * route's bandwidth), and its latency per step over a hop of class hw (sim_hw_class). */
double coll_proto_fraction(int proto, int fam, int per_node, int n_nodes);
double coll_proto_hw_step_s(int proto, int fam, int hw);

/* The group's topology (coll_hops.c): coll_topology reads c->topo once and returns the status;
 * coll_topology_of gives it, or NULL for a group whose hosts carry none (treated as flat: a
 * property error is reported before the simulation, by sim_coll_check). */
int coll_topology(sim_group *c);
const sim_topology *coll_topology_of(sim_group *c);

/* One call's context (coll_msg.c): arguments checked, begun, ended (its bytes added to the
 * member's and its result copied to r). */
int coll_check_call(const sim_group *c, int member, double bytes, const char *what);
void coll_call_begin(call *k, sim_group *c, int member, uint64_t seq, double seg_bytes);
void coll_call_end(call *k, sim_coll_result *r);

/* The all-reduce families, one file each (collective.h describes them): the rows of
 * collective.c's table, and what the families share. */
typedef void (*coll_run_fn)(call *k, double bytes, int channels);
void coll_run_ring(call *k, double bytes, int channels); /* coll_ring.c */
void coll_run_ring_coarse(call *k, double bytes, int channels);
/* The ring in one channel, message-level and closed form (hier falls back on them). */
void coll_ring(call *k, double bytes);
void coll_ring_coarse(call *k, double bytes);
void coll_run_hd(call *k, double bytes, int channels); /* coll_fold.c */
void coll_run_rd(call *k, double bytes, int channels);
void coll_run_tree(call *k, double bytes, int channels); /* coll_tree.c */
void coll_run_hier(call *k, double bytes, int channels); /* coll_hier.c */
void coll_run_hier_coarse(call *k, double bytes, int channels);
void coll_run_dbtree(call *k, double bytes, int channels); /* coll_dbtree.c */
/* The largest latency of a ring step for chunks of `bytes` (the group's ring hops). */
double coll_ring_alpha_max_s(sim_group *c, double bytes);
/* Sends a closed form's merged flow of `bytes` to dst and receives one from src (-1: none),
 * sized so that a TCP route gives it the bandwidth factor of the `unit_bytes` messages it stands
 * for (they differ under SMPI; `share`: the part of the route's bandwidth each flow of the closed
 * form gets); counts `bytes` sent and received. Returns the latency the sent flow paid. */
double coll_exchange_merged(call *k, int dst, int src, double bytes, double unit_bytes,
                            double share);
/* The latency the merged flow from member `from` to `to` pays in coll_exchange_merged. */
double coll_merged_latency_s(const call *k, int from, int to, double bytes, double unit_bytes,
                             double share);
/* The time the network model charges that merged flow, run with the other members' (see
 * coll_msg.c); *lat_s its latency, *wait_s the wait coll_exchange_merged adds after it. */
double coll_merged_flow_s(const call *k, int from, int to, double bytes, double unit_bytes,
                          double share, double shared_Bps, double gamma, double *lat_s,
                          double *wait_s);
/* auto's algorithm (its closed form at scale) and protocol for an all-reduce of `bytes`, found
 * together in one search. */
void coll_auto_resolve(sim_group *c, double bytes, const sim_coll_opts *o, sim_allreduce_algo *algo,
                       sim_nccl_protocol *proto);
/* The family (tree or ring) of the algorithm run. */
int coll_family(sim_allreduce_algo run);
void coll_allgather_coarse(call *k, double bytes_per_member);

#endif
