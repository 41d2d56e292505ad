/* Per-fabric network factors through SimGrid's factor callbacks (see fabric.h). */
#include "sim/fabric.h"

#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
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

bool installed = false; /* the callbacks are in place (LV08 on a platform with fabrics) */
bool lv08 = true;       /* the model of the run */

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

double route_lat_cb(double, const simgrid::s4u::Host *, const simgrid::s4u::Host *,
                    const std::vector<simgrid::s4u::Link *> &links,
                    const std::unordered_set<simgrid::s4u::NetZone *> &) {
    return lat_factor[route_fabric(links)];
}

double route_bw_cb(double, const simgrid::s4u::Host *, const simgrid::s4u::Host *,
                   const std::vector<simgrid::s4u::Link *> &links,
                   const std::unordered_set<simgrid::s4u::NetZone *> &) {
    return bw_factor[route_fabric(links)];
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

double sim_fabric_lv08_latency_factor(sim_fabric f) {
    return static_cast<unsigned>(f) < SIM_FABRIC_COUNT ? lat_factor[f] : lat_factor[0];
}

double sim_fabric_lv08_bandwidth_factor(sim_fabric f) {
    return static_cast<unsigned>(f) < SIM_FABRIC_COUNT ? bw_factor[f] : bw_factor[0];
}

void sim_fabric_install(int use_lv08) {
    lv08 = use_lv08 != 0;
    installed = false;
    if (!lv08) return; /* CM02: plain flows, factor 1 everywhere, as configured */
    auto *engine = simgrid::s4u::Engine::get_instance();
    bool any = false;
    for (const auto *l : engine->get_all_links())
        any = any || link_fabric(l) != SIM_FABRIC_ETHERNET;
    if (!any) return; /* a TCP-only platform: SimGrid's own LV08, bit for bit */
    auto *model = engine->get_netzone_root()->get_network_model();
    model->set_lat_factor_cb(route_lat_cb);
    model->set_bw_factor_cb(route_bw_cb);
    installed = true;
}

double sim_fabric_latency_factor(sg_host_t src, sg_host_t dst) {
    if (!lv08) return 1.0;
    return installed ? lat_factor[host_route_fabric(src, dst)] : lat_factor[SIM_FABRIC_ETHERNET];
}

double sim_fabric_bandwidth_factor(sg_host_t src, sg_host_t dst) {
    if (!lv08) return 1.0;
    return installed ? bw_factor[host_route_fabric(src, dst)] : bw_factor[SIM_FABRIC_ETHERNET];
}

} // extern "C"
