/* Hop sets: routes' latencies and bandwidths as the network model charges them, and a group's
 * topology. */
#include "sim/net/coll/collective.h"

#include <math.h>
#include <stdlib.h>

#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "common/status.h"
#include "sim/net/coll/collective_internal.h"
#include "sim/net/fabric.h"

double coll_hop_latency_s(sg_host_t src, sg_host_t dst, double bytes) {
    return sim_fabric_latency_factor(src, dst, bytes) * sg_host_get_route_latency(src, dst);
}

double coll_hop_bandwidth_Bps(sg_host_t src, sg_host_t dst, double bytes) {
    return sim_fabric_bandwidth_factor(src, dst, bytes) * sg_host_get_route_bandwidth(src, dst);
}

void hop_set_clear(hop_set *h) {
    h->ready = 0;
    h->hw_max = SIM_HW_NVLINK;
    h->tcp_lat_s = h->other_lat_s = 0;
    h->tcp_bw_Bps = h->other_bw_Bps = INFINITY;
    h->tcp_shared_Bps = h->other_shared_Bps = INFINITY;
}

/* One hop whose route leaves it `shared_Bps` (raw) where it shares links. */
static void hop_add(hop_set *h, sg_host_t src, sg_host_t dst, double shared_Bps) {
    const int hw = (int)sim_fabric_route_hw(src, dst);
    if (hw > h->hw_max) h->hw_max = hw;
    if (sim_fabric_route_is_tcp(src, dst)) {
        h->tcp_lat_s = fmax(h->tcp_lat_s, sg_host_get_route_latency(src, dst));
        h->tcp_bw_Bps = fmin(h->tcp_bw_Bps, sg_host_get_route_bandwidth(src, dst));
        h->tcp_shared_Bps = fmin(h->tcp_shared_Bps, shared_Bps);
    } else {
        /* the factors of other fabrics do not depend on the size */
        const double factor = sim_fabric_bandwidth_factor(src, dst, 1);
        h->other_lat_s = fmax(h->other_lat_s, coll_hop_latency_s(src, dst, 1));
        h->other_bw_Bps = fmin(h->other_bw_Bps, factor * sg_host_get_route_bandwidth(src, dst));
        h->other_shared_Bps = fmin(h->other_shared_Bps, factor * shared_Bps);
    }
}

void hop_set_add(hop_set *h, sg_host_t src, sg_host_t dst) {
    hop_add(h, src, dst, sg_host_get_route_bandwidth(src, dst));
}

static int link_cmp(const void *a, const void *b) {
    const uintptr_t x = (uintptr_t) * (sg_link_t const *)a, y = (uintptr_t) * (sg_link_t const *)b;
    return (x > y) - (x < y);
}

/* How many of the n sorted links are l. */
static int link_count(const sg_link_t *sorted, int n, sg_link_t l) {
    int lo = 0, hi = n;
    while (lo < hi) { /* first index not below l */
        const int mid = lo + (hi - lo) / 2;
        if ((uintptr_t)sorted[mid] < (uintptr_t)l)
            lo = mid + 1;
        else
            hi = mid;
    }
    int k = 0;
    while (lo + k < n && sorted[lo + k] == l)
        k++;
    return k;
}

void hop_set_add_concurrent(hop_set *h, const sg_host_t *src, const sg_host_t *dst, int n) {
    xbt_dynar_t route = xbt_dynar_new(sizeof(sg_link_t), NULL);
    sg_link_t *all = NULL;
    int n_all = 0, cap = 0;
    for (int i = 0; i < n; i++) { /* every link every hop crosses, with repeats */
        xbt_dynar_reset(route);
        sg_host_get_route(src[i], dst[i], route);
        for (unsigned j = 0; j < xbt_dynar_length(route); j++) {
            if (n_all == cap) all = realloc(all, sizeof *all * (size_t)(cap = cap ? 2 * cap : 64));
            SS_ASSERT(all);
            all[n_all++] = xbt_dynar_get_as(route, j, sg_link_t);
        }
    }
    if (n_all) qsort(all, (size_t)n_all, sizeof *all, link_cmp);
    for (int i = 0; i < n; i++) {
        xbt_dynar_reset(route);
        sg_host_get_route(src[i], dst[i], route);
        double share = INFINITY;
        for (unsigned j = 0; j < xbt_dynar_length(route); j++) {
            const sg_link_t l = xbt_dynar_get_as(route, j, sg_link_t);
            const int k = sg_link_is_shared(l) ? link_count(all, n_all, l) : 1;
            share = fmin(share, sg_link_get_bandwidth(l) / (k > 0 ? k : 1));
        }
        hop_add(h, src[i], dst[i],
                isinf(share) ? sg_host_get_route_bandwidth(src[i], dst[i]) : share);
    }
    free(all);
    xbt_dynar_free(&route);
}

double hop_set_latency_s(const hop_set *h, double bytes) {
    return fmax(h->tcp_lat_s * sim_fabric_tcp_latency_factor(bytes), h->other_lat_s);
}

double hop_set_bandwidth_Bps(const hop_set *h, double bytes) {
    return fmin(h->tcp_bw_Bps * sim_fabric_tcp_bandwidth_factor(bytes), h->other_bw_Bps);
}

double hop_set_shared_bandwidth_Bps(const hop_set *h, double bytes) {
    return fmin(h->tcp_shared_Bps * sim_fabric_tcp_bandwidth_factor(bytes), h->other_shared_Bps);
}

int coll_topology(sim_group *c) {
    if (c->topo) return SS_OK;
    return sim_topology_read(c->hosts, c->size, &c->topo);
}

/* The group's topology; a property error is reported before the simulation (sim_coll_check),
 * so here it can only be a group made later: treated as flat. */
const sim_topology *coll_topology_of(sim_group *c) {
    if (coll_topology(c) != SS_OK) return NULL;
    return c->topo;
}
