/* Per-fabric network factors: what a link is made of (its <prop id="fabric" .../>) decides the
 * latency and bandwidth factors SimGrid applies to a route that crosses it.
 *
 *     simgrid_load_platform(path);
 *     sim_fabric_install(SIM_FACTORS_LV08);           // once, after the platform is loaded
 *     double f = sim_fabric_latency_factor(src_host, dst_host, bytes); // 13.01 on a TCP route
 *
 * The rule (platforms/README.md, "Network model per fabric"):
 * - under CM02 every factor is 1 (plain flows: time = latency + size / bandwidth);
 * - under LV08 a route is a TCP route when any of its links is `ethernet` (or has no fabric
 *   property): it gets LV08's TCP factors, latency x 13.01 and bandwidth x 0.97 (Velho and
 *   Legrand, SIMUTools 2009); a route made only of `infiniband`, `roce`, `nvlink` and `pcie`
 *   links gets the factors of its slowest fabric in the table of fabric.cpp (1 and 1: no TCP
 *   slow start or window effects; the link bandwidths are the achievable rates);
 * - a platform none of whose links names a non-TCP fabric runs exactly as SimGrid's LV08 does
 *   (no callback is installed), so flat platforms keep their times to the bit;
 * - under SMPI the TCP routes take SimGrid's SMPI factors instead, which depend on the message
 *   size (about 2 x the latency below 64 KiB, 11.6 x from 64 KiB; fabric.cpp); other routes as
 *   under LV08;
 * - under TCP-stream the TCP routes take SMPI's factors below 64 KiB and those of a warm,
 *   persistent TCP stream from 64 KiB: latency x 1 (no rendezvous handshake, no window to
 *   open) and bandwidth x 1448/1538 (TCP payload per 1500-byte Ethernet frame on the wire): the
 *   way NCCL's socket transport moves large messages (fabric.cpp). */
#ifndef SS_SIM_FABRIC_H
#define SS_SIM_FABRIC_H

#include <simgrid/forward.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sim_fabric {
    SIM_FABRIC_ETHERNET = 0, /* TCP over Ethernet; also links without a fabric property */
    SIM_FABRIC_INFINIBAND = 1,
    SIM_FABRIC_ROCE = 2,
    SIM_FABRIC_NVLINK = 3,
    SIM_FABRIC_PCIE = 4,
    SIM_FABRIC_COUNT = 5
} sim_fabric;

/* "ethernet" | "infiniband" | "roce" | "nvlink" | "pcie" (case-insensitive): 0, else -1. */
int sim_fabric_parse(const char *text, sim_fabric *out);
const char *sim_fabric_name(sim_fabric f);
/* "ethernet, infiniband, roce, nvlink, pcie": for messages. */
const char *sim_fabric_valid_names(void);

/* The factors a run applies: none (CM02, ns-3), LV08's, SMPI's size-dependent ones, or SMPI's
 * below 64 KiB and a persistent stream's from there (TCP-stream). */
typedef enum sim_factor_set {
    SIM_FACTORS_NONE = 0,
    SIM_FACTORS_LV08 = 1,
    SIM_FACTORS_SMPI = 2,
    SIM_FACTORS_STREAM = 3
} sim_factor_set;

/* Installs the per-route factor callbacks on SimGrid's network model where the set needs them
 * (LV08 on a platform with a non-TCP fabric; SMPI and TCP-stream always); otherwise leaves the
 * model as configured. Call once, after simgrid_load_platform(). */
void sim_fabric_install(sim_factor_set set);

/* The factors of a TCP route for a message of `bytes` under the installed set (1 under none). */
double sim_fabric_tcp_latency_factor(double bytes);
double sim_fabric_tcp_bandwidth_factor(double bytes);
/* The sizes (bytes, decreasing, the last 0) from which the TCP factors of the installed set
 * apply, each up to the one before: their count. */
int sim_fabric_tcp_size_steps(const double **thresholds);
/* The hardware class of a route in NCCL's cost model: NVLink when all its links are nvlink, PCI
 * when they are nvlink or pcie with some pcie (or the route is empty: one host), else network. */
typedef enum sim_hw_class { SIM_HW_NVLINK = 0, SIM_HW_PCI = 1, SIM_HW_NET = 2 } sim_hw_class;
sim_hw_class sim_fabric_route_hw(sg_host_t src, sg_host_t dst);

/* sg_mailbox_put_async() with the transfer's rate capped at rate_Bps (bytes/s). */
sg_comm_t sim_put_async_rate(sg_mailbox_t mailbox, void *payload, long bytes, double rate_Bps);

/* 1 if the route src -> dst takes the TCP factors. */
int sim_fabric_route_is_tcp(sg_host_t src, sg_host_t dst);

/* The factor SimGrid applies to the latency (bandwidth) of a message of `bytes` on the route
 * src -> dst, as installed by sim_fabric_install(): 1 under CM02. */
double sim_fabric_latency_factor(sg_host_t src, sg_host_t dst, double bytes);
double sim_fabric_bandwidth_factor(sg_host_t src, sg_host_t dst, double bytes);

#ifdef __cplusplus
}
#endif

#endif
