/* The node-aware collectives of collective.h: multi-channel rings, the hierarchical all-reduce
 * (message-level and closed form), the double binary tree, the closed-form all-gather, and
 * auto's choice. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <simgrid/semaphore.h>

#include "common/status.h"
#include "sim/collective_internal.h"
#include "sim/fabric.h"
#include "sim/internal.h"

/* Latencies and bandwidths are read as the network model charges them (sim/fabric.h): LV08's
 * TCP factors (13.01 and 0.97, Velho and Legrand's calibration, SimGrid's "Configuring SimGrid"
 * manual), SMPI's size-dependent ones, 1 on RDMA and NVLink/PCIe routes and under CM02. The
 * hop sets of collective_internal.h keep the slowest hops of a kind; the size of the messages
 * gives the factors. */

int coll_topology(sim_comm *c) {
    if (c->topo) return SS_OK;
    return sim_topology_read(c->hosts, c->size, &c->topo);
}

/* The group's topology; a property error is reported before the simulation (sim_coll_check),
 * so here it can only be a group made later: treated as flat. */
static const sim_topology *topology_of(sim_comm *c) {
    if (coll_topology(c) != SS_OK) return NULL;
    return c->topo;
}

/* ---------------------------------------------------------------- multi-channel ring */

/* Channel orders: on regular nodes, channel ch visits the nodes in order and inside each starts
 * at local index ch G / C; otherwise the member order. */
static void channel_orders(sim_comm *c, int channels) {
    if (c->channel_count == channels) return;
    const int n = c->size;
    free(c->channel_next);
    free(c->channel_prev);
    c->channel_next = ss_malloc(sizeof(int) * (size_t)(channels * n));
    c->channel_prev = ss_malloc(sizeof(int) * (size_t)(channels * n));
    const sim_topology *t = topology_of(c);
    const int g = t && t->per_node > 1 ? t->per_node : 1;
    int *order = ss_malloc(sizeof(int) * (size_t)n);
    for (int ch = 0; ch < channels; ch++) {
        const int start = (int)((long)ch * g / channels) % g;
        for (int i = 0; i < n; i++)
            order[i] = g > 1 ? t->members[i / g * g + (start + i % g) % g] : i;
        for (int i = 0; i < n; i++) {
            c->channel_next[ch * n + order[i]] = order[(i + 1) % n];
            c->channel_prev[ch * n + order[i]] = order[(i + n - 1) % n];
        }
    }
    free(order);
    c->channel_count = channels;
}

void coll_ring_channels(call *k, double bytes, int channels) {
    sim_comm *c = k->c;
    const int n = c->size, i = k->member;
    channel_orders(c, channels);
    const double chunk = bytes / channels / n;
    k->seg_bytes = 0; /* the channels are the split */
    for (int s = 0; s < 2 * (n - 1); s++) {
        coll_proto_pause(k, c->channel_next[i]);
        step st;
        st.n = 0;
        for (int ch = 0; ch < channels; ch++) {
            k->channel = ch;
            coll_post_send(k, &st, c->channel_next[ch * n + i], chunk);
            coll_post_recv(k, &st, c->channel_prev[ch * n + i], chunk);
        }
        coll_step_wait(&st);
    }
    k->channel = 0;
}

/* ---------------------------------------------------------------- hierarchical */

/* One ring phase (reduce-scatter or all-gather) of `bytes` among list[0..n-1], this member at
 * position pos: n-1 steps of bytes/n. */
static void ring_phase(call *k, const int *list, int n, int pos, double bytes) {
    const int next = list[(pos + 1) % n], prev = list[(pos + n - 1) % n];
    for (int s = 0; s < n - 1; s++)
        coll_exchange(k, next, bytes / n, prev, bytes / n);
}

/* The same phase in closed form: one flow of (n-1)/n of the bytes, then the wait for the step
 * latencies it stands for ((n-1) x the slowest hop's latency for chunks of bytes/n in all, as
 * ring-coarse). */
static void ring_phase_coarse(call *k, const int *list, int n, int pos, double bytes,
                              const hop_set *hops, double share) {
    const int next = list[(pos + 1) % n], prev = list[(pos + n - 1) % n];
    const double part = bytes * (n - 1) / n, chunk = bytes / n;
    coll_exchange_merged(k, next, prev, part, chunk, share);
    const double alpha_in = coll_merged_latency_s(k, prev, k->member, part, chunk, share);
    const double extra_s =
        (n - 1) * (hop_set_latency_s(hops, chunk) + coll_proto_set_step_s(k, hops)) - alpha_in;
    if (extra_s > 0) sg_actor_sleep_for(extra_s);
}

/* The hops of the intra-node rings and of the rail rings (once). */
static void hier_hops(sim_comm *c, const sim_topology *t) {
    if (c->intra_hops.ready) return;
    const int g = t->per_node, nodes = t->n_nodes;
    hop_set_clear(&c->intra_hops);
    hop_set_clear(&c->rail_hops);
    for (int m = 0; m < c->size; m++) {
        const int node = t->node[m], l = t->local[m];
        if (g > 1)
            hop_set_add(&c->intra_hops, c->hosts[m], c->hosts[t->members[node * g + (l + 1) % g]]);
        if (nodes > 1)
            hop_set_add(&c->rail_hops, c->hosts[m],
                        c->hosts[t->rails[l * nodes + (node + 1) % nodes]]);
    }
    c->intra_hops.ready = c->rail_hops.ready = 1;
}

void coll_hier(call *k, double bytes, int coarse) {
    sim_comm *c = k->c;
    const sim_topology *t = topology_of(c);
    if (!t || t->per_node < 1) {
        /* nodes of unequal member counts: no rails to pair; the ring */
        if (coarse)
            coll_ring_coarse(k, bytes);
        else
            coll_ring(k, bytes);
        return;
    }
    const int g = t->per_node, nodes = t->n_nodes, m = k->member;
    const int node = t->node[m], l = t->local[m];
    const int *intra = t->members + node * g, *rail = t->rails + l * nodes;
    if (coarse) hier_hops(c, t);
    /* the G rail rings of a node share its R NICs */
    const double rail_share = t->n_nics < g ? (double)t->n_nics / g : 1.0;
    if (g > 1) {
        if (coarse)
            ring_phase_coarse(k, intra, g, l, bytes, &c->intra_hops, 1);
        else
            ring_phase(k, intra, g, l, bytes);
    }
    if (nodes > 1) {
        for (int phase = 0; phase < 2; phase++) {
            if (coarse)
                ring_phase_coarse(k, rail, nodes, node, bytes / g, &c->rail_hops, rail_share);
            else
                ring_phase(k, rail, nodes, node, bytes / g);
        }
    }
    if (g > 1) {
        if (coarse)
            ring_phase_coarse(k, intra, g, l, bytes, &c->intra_hops, 1);
        else
            ring_phase(k, intra, g, l, bytes);
    }
}

/* ---------------------------------------------------------------- double binary tree */

/* Children of position p (1..n) in the in-order binary tree: a position of lowest set bit b > 1
 * has p - b/2 on its left and, on its right, p + the largest power of two <= b/2 that stays
 * within n; odd positions are leaves. The root is the largest power of two <= n. */
static void inorder_children(int p, int n, int *left, int *right) {
    const int b = p & -p;
    *left = *right = 0;
    if (b == 1) return;
    *left = p - b / 2;
    for (int step = b / 2; step >= 1; step /= 2) {
        if (p + step <= n) {
            *right = p + step;
            return;
        }
    }
}

/* The member at position p: tree 0 puts member r at position r + 1; tree 1 mirrors it (n even:
 * n - r) or shifts it by one (n odd: (r + 1) mod n + 1), so that the inner nodes (even
 * positions) of one are leaves of the other. */
static int tree_member(int tree, int p, int n) {
    if (tree == 0) return p - 1;
    return n % 2 == 0 ? n - p : (p == 1 ? n - 1 : p - 2);
}

/* The links of every member in both trees (once): TREE_LINKS ints each, parent then up to three
 * children (-1: none). On groups of multi-GPU nodes (NCCL's trees since 2.4): the double binary
 * tree runs over the nodes, and inside each node the GPUs form a chain whose head joins the
 * node-level tree (tree 0: head local 0, chain 0 -> 1 -> ... -> G-1; tree 1: head local G-1,
 * chain G-1 -> ... -> 0, so that the two trees leave the node through different GPUs and NICs).
 * On flat groups every member is a node of its own: the double binary tree over the members. */
/* The member at position l of node k's chain in tree tr (position 0: the head); on flat groups
 * (g = 1) member k. */
static int chain_member(const sim_topology *t, int g, int tr, int k, int l) {
    return g > 1 ? t->members[k * g + (tr == 0 ? l : g - 1 - l)] : k;
}

static void dbtree_links(sim_comm *c) {
    if (c->tree_next[0]) return;
    const int n = c->size;
    const sim_topology *t = topology_of(c);
    const int g = t && t->per_node > 1 ? t->per_node : 1;
    const int nodes = g > 1 ? t->n_nodes : n;
    for (int tr = 0; tr < 2; tr++) {
        int *nx = ss_malloc(sizeof(int) * TREE_LINKS * (size_t)n);
        for (int i = 0; i < TREE_LINKS * n; i++)
            nx[i] = -1;
        for (int k = 0; k < nodes; k++)
            for (int l = 1; l < g; l++) {
                const int m = chain_member(t, g, tr, k, l), up = chain_member(t, g, tr, k, l - 1);
                nx[TREE_LINKS * m] = up;
                nx[TREE_LINKS * up + 1] = m;
            }
        for (int p = 1; p <= nodes; p++) {
            int kids[2];
            const int head = chain_member(t, g, tr, tree_member(tr, p, nodes), 0);
            inorder_children(p, nodes, &kids[0], &kids[1]);
            for (int j = 0; j < 2; j++) {
                if (!kids[j]) continue;
                const int child = chain_member(t, g, tr, tree_member(tr, kids[j], nodes), 0);
                nx[TREE_LINKS * head + 2 + j] = child;
                nx[TREE_LINKS * child] = head;
            }
        }
        c->tree_next[tr] = nx;
    }
}

/* One tree: reduce to the root (children's parts received together), then broadcast (sent to
 * the children together); segments pipeline the reduction. */
static void tree_half(call *k, const int *nx, double bytes) {
    const int parent = nx[0];
    const int nseg = k->seg_bytes > 0 ? (int)fmin(ceil(bytes / k->seg_bytes), 1e6) : 1;
    k->seg_bytes = 0; /* segments are explicit here */
    sg_comm_t up = NULL;
    for (int s = 0; s < nseg; s++) {
        const double b = coll_part_bytes(bytes, s, nseg);
        step st;
        st.n = 0;
        for (int j = 1; j < TREE_LINKS; j++)
            if (nx[j] >= 0) coll_post_recv(k, &st, nx[j], b);
        coll_step_wait(&st);
        if (parent >= 0) {
            if (up) sg_comm_wait(up);
            coll_proto_pause(k, parent);
            step one;
            one.n = 0;
            coll_post_send(k, &one, parent, b);
            up = one.comms[0];
        }
    }
    if (up) sg_comm_wait(up);
    for (int s = 0; s < nseg; s++) {
        const double b = coll_part_bytes(bytes, s, nseg);
        if (parent >= 0) coll_exchange(k, -1, 0, parent, b);
        double pause_s = 0; /* the protocol's step to the slowest child */
        for (int j = 1; j < TREE_LINKS; j++)
            if (nx[j] >= 0) pause_s = fmax(pause_s, coll_proto_step_s(k, nx[j]));
        if (pause_s > 0) sg_actor_sleep_for(pause_s);
        step st;
        st.n = 0;
        for (int j = 1; j < TREE_LINKS; j++)
            if (nx[j] >= 0) coll_post_send(k, &st, nx[j], b);
        coll_step_wait(&st);
    }
}

/* The second tree runs in a helper actor on the member's host, at the same time. */
typedef struct tree_job {
    call k;
    const int *nx;
    double bytes;
    sg_sem_t done;
} tree_job;

static void tree_helper(int argc, char **argv) {
    (void)argc;
    (void)argv;
    tree_job *j = sg_actor_self_get_data();
    tree_half(&j->k, j->nx, j->bytes);
    sg_sem_release(j->done);
}

void coll_dbtree(call *k, double bytes) {
    sim_comm *c = k->c;
    dbtree_links(c);
    tree_job j;
    j.k = *k;
    memset(&j.k.res, 0, sizeof j.k.res);
    j.k.channel = 1;
    j.nx = c->tree_next[1] + TREE_LINKS * k->member;
    j.bytes = coll_part_bytes(bytes, 1, 2);
    j.done = sg_sem_init(0);
    sg_actor_t a = sg_actor_init("dbtree", c->hosts[k->member]);
    sg_actor_set_data(a, &j);
    sg_actor_start(a, tree_helper, 0, NULL);
    tree_half(k, c->tree_next[0] + TREE_LINKS * k->member, coll_part_bytes(bytes, 0, 2));
    sg_sem_acquire(j.done);
    sg_sem_destroy(j.done);
    k->res.bytes_sent += j.k.res.bytes_sent;
    k->res.bytes_recv += j.k.res.bytes_recv;
}

/* ---------------------------------------------------------------- closed-form all-gather */

/* Sum over Bruck's steps of the slowest pair's latency and the step's bytes over the narrowest
 * route (once per group and size). */
static double gather_closed_form_s(sim_comm *c, double bytes_per_member) {
    if (c->gather_coarse_s >= 0 && c->gather_coarse_bytes == bytes_per_member)
        return c->gather_coarse_s;
    const int n = c->size;
    double total = 0;
    for (int dist = 1; dist < n; dist *= 2) {
        const int blocks = dist < n - dist ? dist : n - dist;
        const double msg = (double)coll_wire_bytes(blocks * bytes_per_member);
        double alpha = 0, bw = INFINITY;
        for (int m = 0; m < n; m++) {
            sg_host_t src = c->hosts[m], dst = c->hosts[(m - dist + n) % n];
            alpha = fmax(alpha, coll_hop_latency_s(src, dst, msg));
            bw = fmin(bw, coll_hop_bandwidth_Bps(src, dst, msg));
        }
        total += alpha + msg / bw;
    }
    c->gather_coarse_s = total;
    c->gather_coarse_bytes = bytes_per_member;
    return total;
}

void coll_allgather_coarse(call *k, double bytes_per_member) {
    sim_comm *c = k->c;
    const int n = c->size;
    const double t_s = gather_closed_form_s(c, bytes_per_member);
    if (!c->barrier) c->barrier = sg_barrier_init((unsigned)n);
    sg_barrier_wait(c->barrier);
    sg_actor_sleep_for(t_s);
    for (int dist = 1; dist < n; dist *= 2) {
        const int blocks = dist < n - dist ? dist : n - dist;
        k->res.bytes_sent += (double)coll_wire_bytes(blocks * bytes_per_member);
        k->res.bytes_recv += (double)coll_wire_bytes(blocks * bytes_per_member);
    }
}

/* ---------------------------------------------------------------- protocols */

/* NCCL 2.7.5, src/graph/tuning.cc (collective.h, sim_nccl_protocol): baseLat and hwLat in us, by
 * family (tree, ring) and protocol (LL, LL128, Simple); hwLat also by hop class (NVLink, PCI,
 * network). Tree/Simple's hwLat is, as tuning.cc says, the latency of a 256 KB chunk, "~ base
 * lat + 256k/12GB/s (+ 256k/12GB/s for the network)": 28 us on NVLink and PCI, 50 us on the
 * network. The messages here pay their own transfer, so what is charged per hop is that figure
 * less the chunk's transfer at 12 GB/s (21.8 us, twice on the network): 6.2 us and 6.3 us. */
static const double base_us[2][3] = {{4.4, 4.4, 0}, {3.6, 10.0, 8.4}};
#define TREE_SIMPLE_CHUNK_US (262144.0 / 12e9 * 1e6)
static const double step_us[3][2][3] = {
    {{0.52, 1.2, 28 - TREE_SIMPLE_CHUNK_US}, {0.47, 1.9, 3.4}},
    {{1.0, 1.9, 28 - TREE_SIMPLE_CHUNK_US}, {1.0, 2.5, 5.7}},
    {{5.0, 8.5, 50 - 2 * TREE_SIMPLE_CHUNK_US}, {2.7, 4.0, 9.6}},
};

static const char *const protocol_names[] = {"auto", "LL", "LL128", "Simple"};

int sim_nccl_protocol_parse(const char *option, const char *text, sim_nccl_protocol *out) {
    for (int i = 0; i < 4; i++)
        if (text && !strcasecmp(text, protocol_names[i])) {
            *out = (sim_nccl_protocol)i;
            return SS_OK;
        }
    return ss_error_set(SS_EUSAGE, "%s: unknown protocol '%s' (valid: auto, LL, LL128, Simple)",
                        option, text ? text : "");
}

const char *sim_nccl_protocol_name(sim_nccl_protocol p) {
    return (unsigned)p < 4 ? protocol_names[p] : "?";
}

int coll_is_nccl_algo(sim_allreduce_algo a) {
    return coll_is_nccl(a);
}

int coll_is_nccl(sim_allreduce_algo requested) {
    return requested == SIM_ALLREDUCE_AUTO || requested == SIM_ALLREDUCE_HIER ||
           requested == SIM_ALLREDUCE_HIER_COARSE || requested == SIM_ALLREDUCE_DBTREE;
}

int coll_takes_protocol(sim_allreduce_algo requested, sim_nccl_protocol p) {
    return coll_is_nccl(requested) ||
           (p != SIM_PROTOCOL_AUTO &&
            (requested == SIM_ALLREDUCE_RING || requested == SIM_ALLREDUCE_RING_COARSE));
}

int coll_family(sim_allreduce_algo run) {
    return run == SIM_ALLREDUCE_DBTREE ? NCCL_FAMILY_TREE : NCCL_FAMILY_RING;
}

/* The fraction of a route's bandwidth a message of protocol proto gets (tuning.cc's "model
 * refinements" of busBw for the all-reduce). */
static double proto_fraction(int proto, int fam, int per_node, int n_nodes) {
    switch (proto) {
    case SIM_PROTOCOL_LL:
        return fam == NCCL_FAMILY_RING ? 1.0 / 4.0 : 1.0 / 3.8;
    case SIM_PROTOCOL_LL128:
        if (fam == NCCL_FAMILY_RING) return per_node < 2 ? 0.7 : 0.92;
        return n_nodes <= 1 ? 7.0 / 9.0 : 0.915;
    default:
        return 1.0;
    }
}

double coll_proto_base_s(int proto, int fam) {
    return proto >= SIM_PROTOCOL_LL && proto <= SIM_PROTOCOL_SIMPLE
               ? 1e-6 * base_us[fam][proto - SIM_PROTOCOL_LL]
               : 0;
}

static double step_s(int proto, int fam, int hw) {
    return proto >= SIM_PROTOCOL_LL && proto <= SIM_PROTOCOL_SIMPLE
               ? 1e-6 * step_us[hw][fam][proto - SIM_PROTOCOL_LL]
               : 0;
}

void coll_proto_set(call *k, int proto, int fam, int per_node, int n_nodes) {
    k->proto = proto;
    k->family = fam;
    k->proto_frac = proto_fraction(proto, fam, per_node, n_nodes);
    k->hw_dst = -1;
}

double coll_proto_step_s(call *k, int dst) {
    if (k->proto == SIM_PROTOCOL_AUTO || dst < 0) return 0;
    if (k->hw_dst != dst) {
        k->hw_class = (int)sim_fabric_route_hw(k->c->hosts[k->member], k->c->hosts[dst]);
        k->hw_dst = dst;
    }
    return step_s(k->proto, k->family, k->hw_class);
}

void coll_proto_pause(call *k, int dst) {
    const double s = coll_proto_step_s(k, dst);
    if (s > 0) sg_actor_sleep_for(s);
}

double coll_proto_set_step_s(const call *k, const hop_set *h) {
    return step_s(k->proto, k->family, h->hw_max);
}

/* ---------------------------------------------------------------- auto */

enum { HOPS_RING, HOPS_INTRA, HOPS_RAIL };

/* The hops of each kind (once), each kind's hops as running at once: a ring's steps, the
 * intra-node rings of every node, the rail rings of every rail. */
static void auto_figures(sim_comm *c, const sim_topology *t) {
    if (c->est_ready) return;
    const int n = c->size;
    const int g = t && t->per_node > 1 ? t->per_node : 0;
    sg_host_t *src = malloc(sizeof *src * (size_t)n), *dst = malloc(sizeof *dst * (size_t)n);
    SS_ASSERT(src && dst);
    for (int h = 0; h < 3; h++) {
        int k = 0;
        hop_set_clear(&c->est_hops[h]);
        for (int m = 0; m < n; m++) {
            int next = h == HOPS_RING ? (m + 1) % n : -1;
            if (g && h == HOPS_INTRA) next = t->members[t->node[m] * g + (t->local[m] + 1) % g];
            if (g && h == HOPS_RAIL && t->n_nodes > 1)
                next = t->rails[t->local[m] * t->n_nodes + (t->node[m] + 1) % t->n_nodes];
            if (next < 0 || next == m) continue;
            src[k] = c->hosts[m];
            dst[k++] = c->hosts[next];
        }
        hop_set_add_concurrent(&c->est_hops[h], src, dst, k);
    }
    free(src);
    free(dst);
    c->est_ready = 1;
}

/* Latency and bandwidth of the slowest hop of kind h for messages of `bytes`. */
static double est_alpha(const sim_comm *c, int h, double bytes) {
    return hop_set_latency_s(&c->est_hops[h], bytes);
}

/* The bandwidth a message of the kind gets under protocol fraction f: the protocol's cap on its
 * route, or its share where the kind's hops meet on a link (a NIC of G / R GPUs, a PCIe switch
 * uplink of two GPUs), whichever is smaller. */
static double est_bw(const sim_comm *c, int h, double bytes, double f) {
    return fmin(f * hop_set_bandwidth_Bps(&c->est_hops[h], bytes),
                hop_set_shared_bandwidth_Bps(&c->est_hops[h], bytes));
}

/* The alpha-beta estimates auto compares (collective.h; README "Collectives"), each with the
 * factors of the messages it sends and the costs of protocol p: its base latency, its latency per
 * step over the slowest hop class of the kind, its fraction of the bandwidth. */
typedef struct est_ctx {
    const sim_comm *c;
    const sim_topology *t;
    int per_node, nodes; /* 1 and the group size on flat groups */
} est_ctx;

static double est_step(const est_ctx *e, int h, int p, int fam) {
    return step_s(p, fam, e->c->est_hops[h].hw_max);
}

static double estimate_ring_s(const est_ctx *e, double bytes, double bw_scale, int p) {
    const sim_comm *c = e->c;
    const int n = c->size, fam = NCCL_FAMILY_RING;
    const double chunk = bytes / n, f = proto_fraction(p, fam, e->per_node, e->nodes);
    const double a = est_alpha(c, HOPS_RING, chunk) + est_step(e, HOPS_RING, p, fam);
    const double b = est_bw(c, HOPS_RING, chunk, f) * bw_scale;
    return coll_proto_base_s(p, fam) + 2.0 * (n - 1) * a + 2.0 * (n - 1) / n * bytes / b;
}

/* The tree: 2 floor(log2 K) hops between nodes and, on multi-GPU nodes, 2 (G-1) along the
 * chains inside them (NCCL's own tree latency, tuning.cc: 2 ((nRanks/nNodes - 1) intraLat +
 * log2(nNodes) interLat)). */
static double estimate_dbtree_s(const est_ctx *e, double bytes, int p) {
    const sim_comm *c = e->c;
    const int fam = NCCL_FAMILY_TREE, nodes_apply = e->per_node > 1 && e->nodes > 1;
    const double f = proto_fraction(p, fam, e->per_node, e->nodes);
    const int inter = nodes_apply ? HOPS_RAIL : HOPS_RING;
    /* between nodes the trees leave through one or two GPUs: the route's own bandwidth */
    double s = coll_proto_base_s(p, fam) +
               2.0 * floor(log2((double)(e->per_node > 1 ? e->nodes : c->size))) *
                   (est_alpha(c, inter, bytes) + est_step(e, inter, p, fam) +
                    bytes / (f * hop_set_bandwidth_Bps(&c->est_hops[inter], bytes)));
    if (e->per_node > 1)
        s += 2.0 * (e->per_node - 1) *
             (est_alpha(c, HOPS_INTRA, bytes) + est_step(e, HOPS_INTRA, p, fam) +
              bytes / est_bw(c, HOPS_INTRA, bytes, f));
    return s;
}

static double estimate_hier_s(const est_ctx *e, double bytes, int p) {
    const sim_comm *c = e->c;
    const sim_topology *t = e->t;
    const int g = t->per_node, nodes = t->n_nodes, fam = NCCL_FAMILY_RING;
    const double f = proto_fraction(p, fam, g, nodes);
    /* the G / R rails of one NIC get R / G of it each (est_bw), or the protocol's cap */
    const double intra = bytes / g, rail = bytes / g / nodes;
    return coll_proto_base_s(p, fam) +
           2.0 * (g - 1) *
               (est_alpha(c, HOPS_INTRA, intra) + est_step(e, HOPS_INTRA, p, fam) +
                intra / est_bw(c, HOPS_INTRA, intra, f)) +
           2.0 * (nodes - 1) *
               (est_alpha(c, HOPS_RAIL, rail) + est_step(e, HOPS_RAIL, p, fam) +
                rail / est_bw(c, HOPS_RAIL, rail, f));
}

int sim_allreduce_auto_channels(sim_comm *c, const sim_coll_opts *o) {
    if (o && o->channels > 1) return o->channels;
    const sim_topology *t = c->size > 1 ? topology_of(c) : NULL;
    if (!t || t->per_node < 2 || t->n_nodes < 2) return 1;
    return t->n_nics < SIM_MAX_CHANNELS ? t->n_nics : SIM_MAX_CHANNELS;
}

/* The (algorithm, protocol) of least estimate for an all-reduce of `bytes`: among `only` (or
 * ring, hier on nodes, dbtree when only is AUTO), with o->protocol if named, else LL or Simple. */
static void choose(sim_comm *c, double bytes, const sim_coll_opts *o, sim_allreduce_algo only,
                   sim_allreduce_algo *algo, sim_nccl_protocol *proto) {
    const sim_topology *t = topology_of(c);
    auto_figures(c, t);
    const int nodes_apply = t && t->per_node > 1 && t->n_nodes > 1;
    est_ctx e = {c, t, 1, c->size};
    if (t && t->per_node > 1) {
        e.per_node = t->per_node;
        e.nodes = t->n_nodes;
    }
    /* channels beyond one multiply the ring's inter-node bandwidth up to the NICs per node */
    const double scale = nodes_apply ? fmin(sim_allreduce_auto_channels(c, o), t->n_nics) : 1.0;
    const sim_nccl_protocol named = o ? o->protocol : SIM_PROTOCOL_AUTO;
    const sim_nccl_protocol protos[2] = {SIM_PROTOCOL_LL, SIM_PROTOCOL_SIMPLE};
    double best_s = INFINITY;
    *algo = only == SIM_ALLREDUCE_AUTO ? SIM_ALLREDUCE_RING : only;
    *proto = named != SIM_PROTOCOL_AUTO ? named : SIM_PROTOCOL_SIMPLE;
    for (int i = 0; i < (named != SIM_PROTOCOL_AUTO ? 1 : 2); i++) {
        const sim_nccl_protocol p = named != SIM_PROTOCOL_AUTO ? named : protos[i];
        const int any = only == SIM_ALLREDUCE_AUTO;
        double s;
        if (any || only == SIM_ALLREDUCE_RING || only == SIM_ALLREDUCE_RING_COARSE) {
            s = estimate_ring_s(&e, bytes, scale, p);
            if (s < best_s) best_s = s, *algo = any ? SIM_ALLREDUCE_RING : only, *proto = p;
        }
        /* auto takes hier under Simple only: it stands for NCCL's multi-rail rings where the
         * bandwidth decides; for latency-bound messages NCCL runs its ring or its tree, whose
         * step counts hier's 2 (G - 1) + 2 (K - 1) undercut (README.md, "Collectives") */
        if (nodes_apply && (only != SIM_ALLREDUCE_AUTO || p == SIM_PROTOCOL_SIMPLE) &&
            (any || only == SIM_ALLREDUCE_HIER || only == SIM_ALLREDUCE_HIER_COARSE)) {
            s = estimate_hier_s(&e, bytes, p);
            if (s < best_s) best_s = s, *algo = any ? SIM_ALLREDUCE_HIER : only, *proto = p;
        }
        if (any || only == SIM_ALLREDUCE_DBTREE) {
            s = estimate_dbtree_s(&e, bytes, p);
            if (s < best_s) best_s = s, *algo = SIM_ALLREDUCE_DBTREE, *proto = p;
        }
    }
}

void coll_auto_resolve(sim_comm *c, double bytes, const sim_coll_opts *o, sim_allreduce_algo *algo,
                       sim_nccl_protocol *proto) {
    if (c->size < 2) {
        *algo = SIM_ALLREDUCE_RING;
        *proto = SIM_PROTOCOL_AUTO;
        return;
    }
    choose(c, bytes, o, SIM_ALLREDUCE_AUTO, algo, proto);
    if (c->size >= SIM_COARSE_MIN_MEMBERS && *algo != SIM_ALLREDUCE_DBTREE) {
        /* ring-coarse stands for the ring only where the hops are alike (flat platforms); on
         * nodes, whose NVLink and NIC hops differ, the closed form that holds is hier's */
        const sim_topology *t = topology_of(c);
        const int nodes_apply = t && t->per_node > 1 && t->n_nodes > 1;
        *algo = nodes_apply ? SIM_ALLREDUCE_HIER_COARSE : SIM_ALLREDUCE_RING_COARSE;
    }
}

sim_allreduce_algo sim_allreduce_auto_pick(sim_comm *c, double bytes, const sim_coll_opts *o) {
    sim_allreduce_algo a;
    sim_nccl_protocol p;
    coll_auto_resolve(c, bytes, o, &a, &p);
    return a;
}

sim_nccl_protocol sim_allreduce_protocol(sim_comm *c, sim_allreduce_algo requested,
                                         sim_allreduce_algo algo, double bytes,
                                         const sim_coll_opts *o) {
    if (!coll_takes_protocol(requested, o ? o->protocol : SIM_PROTOCOL_AUTO) || c->size < 2)
        return SIM_PROTOCOL_AUTO;
    if (o && o->protocol != SIM_PROTOCOL_AUTO) return o->protocol;
    sim_allreduce_algo a;
    sim_nccl_protocol p;
    /* auto's choice was made together with its protocol: the same search gives it back */
    choose(c, bytes, o, requested == SIM_ALLREDUCE_AUTO ? SIM_ALLREDUCE_AUTO : algo, &a, &p);
    return p;
}

int sim_coll_check(sim_comm *c, const sim_coll_opts *o, const char *option) {
    if (o->channels < 0 || o->channels > SIM_MAX_CHANNELS)
        return ss_error_set(SS_EUSAGE, "--channels: %d, need 1 to %d", o->channels,
                            SIM_MAX_CHANNELS);
    int rc = coll_topology(c);
    if (rc != SS_OK) return rc;
    return sim_coll_check_flat(o->algo, sim_topology_is_flat(c->topo), option);
}

int sim_coll_check_flat(sim_allreduce_algo algo, int flat, const char *option) {
    if ((algo == SIM_ALLREDUCE_HIER || algo == SIM_ALLREDUCE_HIER_COARSE) && flat)
        return ss_error_set(SS_EUSAGE,
                            "%s %s: every worker of this platform is a node of its own (no two "
                            "workers' hosts share a 'node' property), so there is no intra-node "
                            "phase to run; use a platform of multi-GPU nodes "
                            "(syncsim platform --nodes N --gpus-per-node G) or ring, "
                            "ring-coarse, dbtree or auto",
                            option, sim_allreduce_algo_name(algo));
    return SS_OK;
}
