/* The hierarchical all-reduce of multi-GPU nodes (NCCL-style): intra-node rings around a ring
 * per rail; and its closed form. */
#include "sim/net/coll/collective.h"

#include <simgrid/actor.h>

#include "sim/net/coll/collective_internal.h"

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
static void hier_hops(sim_group *c, const sim_topology *t) {
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

static void coll_hier(call *k, double bytes, int coarse) {
    sim_group *c = k->c;
    const sim_topology *t = coll_topology_of(c);
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

void coll_run_hier(call *k, double bytes, int channels) {
    (void)channels;
    coll_hier(k, bytes, 0);
}

void coll_run_hier_coarse(call *k, double bytes, int channels) {
    (void)channels;
    coll_hier(k, bytes, 1);
}
