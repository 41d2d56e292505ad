/* auto: the all-reduce algorithm, channel count and protocol of least alpha-beta estimate, as
 * NCCL's tuning picks them; and the check of a group's options before a run. */
#include "sim/net/coll/collective.h"

#include <math.h>
#include <stdlib.h>

#include <simgrid/host.h>

#include "common/status.h"
#include "sim/net/coll/collective_internal.h"

/* The kinds of hop sets auto reads. */
enum { HOPS_RING, HOPS_INTRA, HOPS_RAIL };

/* The hops of each kind (once), each kind's hops as running at once: a ring's steps, the
 * intra-node rings of every node, the rail rings of every rail. */
static void auto_figures(sim_group *c, const sim_topology *t) {
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
static double est_alpha(const sim_group *c, int h, double bytes) {
    return hop_set_latency_s(&c->est_hops[h], bytes);
}

/* The bandwidth a message of the kind gets under protocol fraction f: the protocol's cap on its
 * route, or its share where the kind's hops meet on a link (a NIC of G / R GPUs, a PCIe switch
 * uplink of two GPUs), whichever is smaller. */
static double est_bw(const sim_group *c, int h, double bytes, double f) {
    return fmin(f * hop_set_bandwidth_Bps(&c->est_hops[h], bytes),
                hop_set_shared_bandwidth_Bps(&c->est_hops[h], bytes));
}

/* The alpha-beta estimates auto compares (collective.h; docs/NETWORK.md, "Collectives"), each with
 * the factors of the messages it sends and the costs of protocol p: its base latency, its latency
 * per step over the slowest hop class of the kind, its fraction of the bandwidth. */
typedef struct est_ctx {
    const sim_group *c;
    const sim_topology *t;
    int per_node, nodes; /* 1 and the group size on flat groups */
} est_ctx;

static double est_step(const est_ctx *e, int h, int p, int fam) {
    return coll_proto_hw_step_s(p, fam, e->c->est_hops[h].hw_max);
}

static double estimate_ring_s(const est_ctx *e, double bytes, double bw_scale, int p) {
    const sim_group *c = e->c;
    const int n = c->size, fam = NCCL_FAMILY_RING;
    const double chunk = bytes / n, f = coll_proto_fraction(p, fam, e->per_node, e->nodes);
    const double a = est_alpha(c, HOPS_RING, chunk) + est_step(e, HOPS_RING, p, fam);
    const double b = est_bw(c, HOPS_RING, chunk, f) * bw_scale;
    return coll_proto_base_s(p, fam) + 2.0 * (n - 1) * a + 2.0 * (n - 1) / n * bytes / b;
}

/* The trees: 2 floor(log2 K) hops between nodes and, on multi-GPU nodes, 2 (G-1) along the
 * chains inside them (NCCL's own tree latency, tuning.cc: 2 ((nRanks/nNodes - 1) intraLat +
 * log2(nNodes) interLat)), each hop the whole vector at a route's bandwidth (no pipelining).
 * More than 2 trees on nodes of several NICs leave through more of them: the two trees of a
 * pair cross between nodes in opposite directions, so `trees` trees keep min(trees, 2 NICs)
 * directions busy where 2 trees kept 2. Inside a node every tree's chain passes every GPU. */
static double estimate_dbtree_s(const est_ctx *e, double bytes, int p, int trees) {
    const sim_group *c = e->c;
    const int fam = NCCL_FAMILY_TREE, nodes_apply = e->per_node > 1 && e->nodes > 1;
    const double f = coll_proto_fraction(p, fam, e->per_node, e->nodes);
    const int inter = nodes_apply ? HOPS_RAIL : HOPS_RING;
    const double spread =
        nodes_apply && trees > 2 ? fmax(1.0, fmin(trees, 2.0 * e->t->n_nics) / 2.0) : 1.0;
    double s = coll_proto_base_s(p, fam) +
               2.0 * floor(log2((double)(e->per_node > 1 ? e->nodes : c->size))) *
                   (est_alpha(c, inter, bytes) + est_step(e, inter, p, fam) +
                    bytes / (spread * f * hop_set_bandwidth_Bps(&c->est_hops[inter], bytes)));
    if (e->per_node > 1)
        s += 2.0 * (e->per_node - 1) *
             (est_alpha(c, HOPS_INTRA, bytes) + est_step(e, HOPS_INTRA, p, fam) +
              bytes / est_bw(c, HOPS_INTRA, bytes, f));
    return s;
}

static double estimate_hier_s(const est_ctx *e, double bytes, int p) {
    const sim_group *c = e->c;
    const sim_topology *t = e->t;
    const int g = t->per_node, nodes = t->n_nodes, fam = NCCL_FAMILY_RING;
    const double f = coll_proto_fraction(p, fam, g, nodes);
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

int sim_allreduce_auto_channels(sim_group *c, const sim_coll_opts *o) {
    if (o && o->channels > 1) return o->channels;
    const sim_topology *t = c->size > 1 ? coll_topology_of(c) : NULL;
    if (!t || t->per_node < 2 || t->n_nodes < 2) return 1;
    return t->n_nics < SIM_MAX_CHANNELS ? t->n_nics : SIM_MAX_CHANNELS;
}

int sim_allreduce_auto_algo_channels(sim_group *c, const sim_coll_opts *o, sim_allreduce_algo a) {
    if (a == SIM_ALLREDUCE_DBTREE) return o && o->channels > 2 ? o->channels : 2;
    return sim_allreduce_auto_channels(c, o);
}

/* The (algorithm, protocol) of least estimate for an all-reduce of `bytes`: among `only` (or
 * ring, hier on nodes, dbtree when only is AUTO), with o->protocol if named, else LL or Simple. */
static void choose(sim_group *c, double bytes, const sim_coll_opts *o, sim_allreduce_algo only,
                   sim_allreduce_algo *algo, sim_nccl_protocol *proto) {
    const sim_topology *t = coll_topology_of(c);
    auto_figures(c, t);
    const int nodes_apply = t && t->per_node > 1 && t->n_nodes > 1;
    est_ctx e = {c, t, 1, c->size};
    if (t && t->per_node > 1) {
        e.per_node = t->per_node;
        e.nodes = t->n_nodes;
    }
    /* channels beyond one multiply the ring's inter-node bandwidth up to the NICs per node */
    const int channels = sim_allreduce_auto_channels(c, o);
    const double scale = nodes_apply ? fmin(channels, t->n_nics) : 1.0;
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
         * step counts hier's 2 (G - 1) + 2 (K - 1) undercut (docs/NETWORK.md, "Collectives") */
        if (nodes_apply && (only != SIM_ALLREDUCE_AUTO || p == SIM_PROTOCOL_SIMPLE) &&
            (any || only == SIM_ALLREDUCE_HIER || only == SIM_ALLREDUCE_HIER_COARSE)) {
            s = estimate_hier_s(&e, bytes, p);
            if (s < best_s) best_s = s, *algo = any ? SIM_ALLREDUCE_HIER : only, *proto = p;
        }
        if (any || only == SIM_ALLREDUCE_DBTREE) {
            s = estimate_dbtree_s(&e, bytes, p,
                                  sim_allreduce_auto_algo_channels(c, o, SIM_ALLREDUCE_DBTREE));
            if (s < best_s) best_s = s, *algo = SIM_ALLREDUCE_DBTREE, *proto = p;
        }
    }
}

static int coarse_min_members = SIM_COARSE_MIN_MEMBERS;

int sim_coll_coarse_min_members(void) {
    return coarse_min_members;
}

void sim_coll_set_coarse_min_members(int members) {
    coarse_min_members = members;
}

void coll_auto_resolve(sim_group *c, double bytes, const sim_coll_opts *o, sim_allreduce_algo *algo,
                       sim_nccl_protocol *proto) {
    if (c->size < 2) {
        *algo = SIM_ALLREDUCE_RING;
        *proto = SIM_PROTOCOL_AUTO;
        return;
    }
    choose(c, bytes, o, SIM_ALLREDUCE_AUTO, algo, proto);
    if (c->size >= sim_coll_coarse_min_members() && *algo != SIM_ALLREDUCE_DBTREE) {
        /* ring-coarse stands for the ring only where the hops are alike (flat platforms); on
         * nodes, whose NVLink and NIC hops differ, the closed form that holds is hier's */
        const sim_topology *t = coll_topology_of(c);
        const int nodes_apply = t && t->per_node > 1 && t->n_nodes > 1;
        *algo = nodes_apply ? SIM_ALLREDUCE_HIER_COARSE : SIM_ALLREDUCE_RING_COARSE;
    }
}

sim_allreduce_algo sim_allreduce_auto_pick(sim_group *c, double bytes, const sim_coll_opts *o) {
    sim_allreduce_algo a;
    sim_nccl_protocol p;
    coll_auto_resolve(c, bytes, o, &a, &p);
    return a;
}

sim_nccl_protocol sim_allreduce_protocol(sim_group *c, sim_allreduce_algo requested,
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

int sim_coll_check(sim_group *c, const sim_coll_opts *o, const char *option) {
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
