/* NCCL's protocols (LL, LL128, Simple) as NCCL 2.7.5's cost model prices them: a base latency
 * per call, a latency per step, a rate cap per message. */
#include "sim/net/coll/collective.h"

#include <simgrid/actor.h>

#include "sim/net/coll/collective_internal.h"
#include "sim/net/fabric.h"

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

int coll_family(sim_allreduce_algo run) {
    return run == SIM_ALLREDUCE_DBTREE ? NCCL_FAMILY_TREE : NCCL_FAMILY_RING;
}

/* The fraction of a route's bandwidth a message of protocol proto gets (tuning.cc's "model
 * refinements" of busBw for the all-reduce). */
double coll_proto_fraction(int proto, int fam, int per_node, int n_nodes) {
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

double coll_proto_hw_step_s(int proto, int fam, int hw) {
    return proto >= SIM_PROTOCOL_LL && proto <= SIM_PROTOCOL_SIMPLE
               ? 1e-6 * step_us[hw][fam][proto - SIM_PROTOCOL_LL]
               : 0;
}

void coll_proto_set(call *k, int proto, int fam, int per_node, int n_nodes) {
    k->proto = proto;
    k->family = fam;
    k->proto_frac = coll_proto_fraction(proto, fam, per_node, n_nodes);
    k->hw_dst = -1;
}

double coll_proto_step_s(call *k, int dst) {
    if (k->proto == SIM_PROTOCOL_AUTO || dst < 0) return 0;
    if (k->hw_dst != dst) {
        k->hw_class = (int)sim_fabric_route_hw(k->c->hosts[k->member], k->c->hosts[dst]);
        k->hw_dst = dst;
    }
    return coll_proto_hw_step_s(k->proto, k->family, k->hw_class);
}

void coll_proto_pause(call *k, int dst) {
    const double s = coll_proto_step_s(k, dst);
    if (s > 0) sg_actor_sleep_for(s);
}

double coll_proto_set_step_s(const call *k, const hop_set *h) {
    return coll_proto_hw_step_s(k->proto, k->family, h->hw_max);
}
