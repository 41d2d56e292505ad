/* Per-fabric network factors through SimGrid's factor callbacks (see fabric.h). */
#include "sim/net/fabric.h"

#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/Mailbox.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <strings.h>

#include <exception>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

const char *const fabric_names[SIM_FABRIC_COUNT] = {"ethernet", "infiniband", "roce", "nvlink",
                                                    "pcie"};

/* Latency and bandwidth factors per fabric under LV08.
 * - ethernet: LV08's TCP calibration, latency x 13.01 and bandwidth x 0.97 (P. Velho and
 *   A. Legrand, "Accuracy study and improvement of network simulation in the SimGrid framework",
 *   SIMUTools 2009; SimGrid's network/latency-factor and network/bandwidth-factor for LV08).
 *   The latency factor stands for TCP slow start and the RTTs of the window opening.
 * - infiniband, roce: RDMA has no slow start or congestion window to open: a message leaves at
 *   line rate after one latency, which is what CM02 (time = latency + size / bandwidth) says;
 *   factor 1 on both. The shipped platforms give these links their data rate (200 Gb/s HDR,
 *   400 Gb/s NDR), so the 64b/66b encoding is already outside the figure.
 * - nvlink, pcie: load/store or DMA transfers between GPUs of one server, no transport protocol:
 *   factor 1 on both, as CM02; the link bandwidth is the per-direction data rate.
 * Calibrating a fabric against measurements means changing its row here (platforms/README.md
 * lists the sources). */
const double lat_factor[SIM_FABRIC_COUNT] = {13.01, 1.0, 1.0, 1.0, 1.0};
const double bw_factor[SIM_FABRIC_COUNT] = {0.97, 1.0, 1.0, 1.0, 1.0};

/* SimGrid's SMPI network model: LV08 with factors that depend on the message size, fitted by
 * SimGrid's developers to MPI ping-pong times over TCP on a Gigabit Ethernet cluster (SimGrid
 * 3.32's defaults of smpi/lat-factor and smpi/bw-factor; contrib/network_model/
 * smpi_calibration.c in SimGrid's sources). A factor applies from its threshold (bytes) up to
 * the next one. Small messages pay about twice the route latency, not LV08's 13: the 13 stands
 * for the window opening of large flows, which 64 KiB and more still see (11.6). */
const double smpi_threshold[] = {65472, 15424, 9376, 5776, 3484, 1426, 732, 257, 0};
const double smpi_lat[] = {11.6436, 3.48845, 2.59299, 2.18796, 1.88101,
                           1.61075, 1.9503,  1.95341, 2.01467};
const double smpi_bw[] = {0.940694, 0.697866, 0.58729,  1.08739, 0.77493,
                          0.608902, 0.341987, 0.338112, 0.812084};
const int smpi_steps = sizeof smpi_threshold / sizeof smpi_threshold[0];

/* TCP-stream: SMPI's factors below its first threshold (65472 bytes, where MPI over TCP leaves
 * its eager protocol for a rendezvous: OpenMPI's btl_tcp_eager_limit is 64 KiB), and from there
 * the factors of a warm TCP connection that streams what it is given, as NCCL's socket transport
 * does (its receiver posts buffers ahead, so no message waits for a handshake, and a connection
 * kept busy has its congestion window open):
 * - latency x 1: the route's latency, once;
 * - bandwidth x 1448 / 1538: the TCP payload of a 1500-byte Ethernet frame (1500 less 20 bytes
 *   of IPv4 header, 20 of TCP header and 12 of the timestamp option, which Linux sends by
 *   default) over what the frame occupies on the wire (1500 plus 14 bytes of Ethernet header,
 *   4 of FCS, 8 of preamble and 12 of inter-frame gap; IEEE 802.3). Jumbo frames would give
 *   8948 / 9038; the platforms say nothing of MTUs, so this assumes the default. */
const double stream_lat = 1.0;
const double stream_bw = 1448.0 / 1538.0;

int smpi_index(double bytes) {
    for (int i = 0; i < smpi_steps; i++)
        if (bytes >= smpi_threshold[i]) return i;
    return smpi_steps - 1;
}

bool installed = false;                    /* the callbacks are in place */
sim_factor_set factors = SIM_FACTORS_LV08; /* the factors of the run */

/* A TCP route's factor for a message of `bytes` under the installed set: LV08's fixed one, the
 * SMPI table's row, the stream's from 64 KiB under TCP-stream, or 1. */
double tcp_factor(const double *lv08_table, const double *smpi_table, double stream, double bytes) {
    switch (factors) {
    case SIM_FACTORS_LV08:
        return lv08_table[SIM_FABRIC_ETHERNET];
    case SIM_FACTORS_SMPI:
        return smpi_table[smpi_index(bytes)];
    case SIM_FACTORS_STREAM:
        return bytes >= smpi_threshold[0] ? stream : smpi_table[smpi_index(bytes)];
    default:
        return 1.0;
    }
}

double tcp_lat(double bytes) {
    return tcp_factor(lat_factor, smpi_lat, stream_lat, bytes);
}

double tcp_bw(double bytes) {
    return tcp_factor(bw_factor, smpi_bw, stream_bw, bytes);
}

/* Fabric of each link seen so far; SimGrid links live as long as the engine. */
std::unordered_map<const simgrid::s4u::Link *, int> fabric_cache;

int fabric_of_text(const char *text) {
    sim_fabric f;
    return text && sim_fabric_parse(text, &f) == 0 ? static_cast<int>(f) : SIM_FABRIC_ETHERNET;
}

/* The fabric property of the SPLITDUPLEX link `name` (SimGrid keeps it on the pair, not on its
 * halves); NULL if there is no such link. */
const char *split_duplex_fabric(const std::string &name) {
    try {
        const auto *pair = simgrid::s4u::SplitDuplexLink::by_name(name);
        return pair ? pair->get_property("fabric") : nullptr;
    } catch (const std::exception &) {
        return nullptr; /* a link whose name merely ends in _UP or _DOWN */
    }
}

/* The fabric property of a link; the two halves "X_UP"/"X_DOWN" of a SPLITDUPLEX link read it
 * from X, where the platform file puts it. */
int link_fabric(const simgrid::s4u::Link *link) {
    auto it = fabric_cache.find(link);
    if (it != fabric_cache.end()) return it->second;
    const char *text = link->get_property("fabric");
    if (!text) {
        const std::string &name = link->get_name();
        for (const char *suffix : {"_UP", "_DOWN"}) {
            size_t n = std::char_traits<char>::length(suffix);
            if (name.size() > n && name.compare(name.size() - n, n, suffix) == 0) {
                text = split_duplex_fabric(name.substr(0, name.size() - n));
            }
        }
    }
    int f = fabric_of_text(text);
    fabric_cache.emplace(link, f);
    return f;
}

/* The fabric whose factors a route takes: ethernet if any link is (TCP carries the whole
 * route), else the one with the largest latency factor (ties: the first in the table). */
int route_fabric(const std::vector<simgrid::s4u::Link *> &links) {
    if (links.empty()) return SIM_FABRIC_ETHERNET;
    int worst = -1;
    for (const auto *l : links) {
        int f = link_fabric(l);
        if (f == SIM_FABRIC_ETHERNET) return f;
        if (worst < 0 || lat_factor[f] > lat_factor[worst]) worst = f;
    }
    return worst;
}

double route_lat_cb(double bytes, const simgrid::s4u::Host *, const simgrid::s4u::Host *,
                    const std::vector<simgrid::s4u::Link *> &links,
                    const std::unordered_set<simgrid::s4u::NetZone *> &) {
    const int f = route_fabric(links);
    return f == SIM_FABRIC_ETHERNET ? tcp_lat(bytes) : lat_factor[f];
}

double route_bw_cb(double bytes, const simgrid::s4u::Host *, const simgrid::s4u::Host *,
                   const std::vector<simgrid::s4u::Link *> &links,
                   const std::unordered_set<simgrid::s4u::NetZone *> &) {
    const int f = route_fabric(links);
    return f == SIM_FABRIC_ETHERNET ? tcp_bw(bytes) : bw_factor[f];
}

int host_route_fabric(sg_host_t src, sg_host_t dst) {
    std::vector<simgrid::s4u::Link *> links;
    double latency = 0;
    src->route_to(dst, links, &latency);
    return route_fabric(links);
}

} // namespace

extern "C" {

int sim_fabric_parse(const char *text, sim_fabric *out) {
    for (int i = 0; text && i < SIM_FABRIC_COUNT; i++) {
        if (strcasecmp(text, fabric_names[i]) == 0) {
            *out = static_cast<sim_fabric>(i);
            return 0;
        }
    }
    return -1;
}

const char *sim_fabric_name(sim_fabric f) {
    return static_cast<unsigned>(f) < SIM_FABRIC_COUNT ? fabric_names[f] : "?";
}

const char *sim_fabric_valid_names(void) {
    return "ethernet, infiniband, roce, nvlink, pcie";
}

void sim_fabric_install(sim_factor_set set) {
    factors = set;
    installed = false;
    if (set == SIM_FACTORS_NONE) return; /* CM02 and ns-3: plain flows, as configured */
    auto *engine = simgrid::s4u::Engine::get_instance();
    bool any = false;
    for (const auto *l : engine->get_all_links())
        any = any || link_fabric(l) != SIM_FABRIC_ETHERNET;
    /* a TCP-only platform under LV08: SimGrid's own LV08, bit for bit */
    if (!any && set == SIM_FACTORS_LV08) return;
    auto *model = engine->get_netzone_root()->get_network_model();
    model->set_lat_factor_cb(route_lat_cb);
    model->set_bw_factor_cb(route_bw_cb);
    installed = true;
}

double sim_fabric_tcp_latency_factor(double bytes) {
    return tcp_lat(bytes);
}

double sim_fabric_tcp_bandwidth_factor(double bytes) {
    return tcp_bw(bytes);
}

int sim_fabric_tcp_size_steps(const double **thresholds) {
    if (factors != SIM_FACTORS_SMPI && factors != SIM_FACTORS_STREAM) {
        static const double zero = 0;
        *thresholds = &zero;
        return 1;
    }
    *thresholds = smpi_threshold;
    return smpi_steps;
}

sim_hw_class sim_fabric_route_hw(sg_host_t src, sg_host_t dst) {
    std::vector<simgrid::s4u::Link *> links;
    double latency = 0;
    src->route_to(dst, links, &latency);
    bool pcie = false;
    for (const auto *l : links) {
        const int f = link_fabric(l);
        if (f != SIM_FABRIC_NVLINK && f != SIM_FABRIC_PCIE) return SIM_HW_NET;
        pcie = pcie || f == SIM_FABRIC_PCIE;
    }
    return pcie || links.empty() ? SIM_HW_PCI : SIM_HW_NVLINK;
}

sg_comm_t sim_put_async_rate(sg_mailbox_t mailbox, void *payload, long bytes, double rate_Bps) {
    auto comm = mailbox->put_init(payload, static_cast<uint64_t>(bytes));
    comm->set_rate(rate_Bps);
    comm->start();
    comm->add_ref(); /* released by sg_comm_wait(), as for sg_mailbox_put_async() */
    return comm.get();
}

int sim_fabric_route_is_tcp(sg_host_t src, sg_host_t dst) {
    return !installed || host_route_fabric(src, dst) == SIM_FABRIC_ETHERNET;
}

double sim_fabric_latency_factor(sg_host_t src, sg_host_t dst, double bytes) {
    if (factors == SIM_FACTORS_NONE) return 1.0;
    const int f = installed ? host_route_fabric(src, dst) : SIM_FABRIC_ETHERNET;
    return f == SIM_FABRIC_ETHERNET ? tcp_lat(bytes) : lat_factor[f];
}

double sim_fabric_bandwidth_factor(sg_host_t src, sg_host_t dst, double bytes) {
    if (factors == SIM_FACTORS_NONE) return 1.0;
    const int f = installed ? host_route_fabric(src, dst) : SIM_FABRIC_ETHERNET;
    return f == SIM_FABRIC_ETHERNET ? tcp_bw(bytes) : bw_factor[f];
}

} // extern "C"
