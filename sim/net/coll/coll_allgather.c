/* The all-gather: Bruck's messages, or their closed form at scale. */
#include "sim/net/coll/collective.h"

#include <math.h>

#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/host.h>

#include "common/status.h"
#include "sim/net/coll/collective_internal.h"

/* Bruck's steps as messages, or their closed form. */
static int allgather_seq(sim_group *c, int member, double bytes_per_member, int coarse,
                         sim_coll_result *r) {
    int st = coll_check_call(c, member, bytes_per_member, "all-gather");
    if (st) return st;
    call k;
    coll_call_begin(&k, c, member, c->next_seq[member]++, 0);
    int n = c->size;
    if (coarse && n > 1) {
        coll_allgather_coarse(&k, bytes_per_member);
    } else {
        for (int dist = 1; dist < n; dist *= 2) {
            int blocks = dist < n - dist ? dist : n - dist;
            coll_exchange(&k, (member - dist + n) % n, blocks * bytes_per_member,
                          (member + dist) % n, blocks * bytes_per_member);
        }
    }
    coll_call_end(&k, r);
    return SS_OK;
}

int sim_allgather(sim_group *c, int member, double bytes_per_member, sim_coll_result *r) {
    return sim_allgather_opts(c, member, bytes_per_member, NULL, r);
}

int sim_allgather_opts(sim_group *c, int member, double bytes_per_member, const sim_coll_opts *o,
                       sim_coll_result *r) {
    /* auto, and the closed forms of the all-reduce, take the closed form at scale */
    int coarse = o &&
                 (o->algo == SIM_ALLREDUCE_AUTO || o->algo == SIM_ALLREDUCE_RING_COARSE ||
                  o->algo == SIM_ALLREDUCE_HIER_COARSE) &&
                 c && c->size >= sim_coll_coarse_min_members();
    return allgather_seq(c, member, bytes_per_member, coarse, r);
}

int sim_allgather_coarse(sim_group *c, int member, double bytes_per_member, sim_coll_result *r) {
    return allgather_seq(c, member, bytes_per_member, 1, r);
}

/* Sum over Bruck's steps of the slowest pair's latency and the step's bytes over the narrowest
 * route (once per group and size). */
static double gather_closed_form_s(sim_group *c, double bytes_per_member) {
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
    sim_group *c = k->c;
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
