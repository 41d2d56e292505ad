/* The platform check: a SimGrid platform file read with libxml2, validated and its hosts listed,
 * before SimGrid reads it.
 *
 *     sim_platform_info info;
 *     if (sim_platform_check("platforms/cluster_25gbps_16.xml", &info) != SS_OK) return ...;
 *     ... info.n_hosts, info.host_names[i] ...
 *     sim_platform_info_free(&info);
 *
 * Validation happens before SimGrid reads the file (libxml2), so a user never reads a SimGrid
 * abort: a missing file, malformed XML (with its line), a value without a valid unit or zero
 * (bandwidth "25Gbps", latency "5us", speed "15.7Tf"), an unknown cluster topology or zone routing,
 * a duplicate host name, or too few hosts give SS_EINPUT (file problems) or SS_EUSAGE (a request
 * the platform cannot satisfy), with a message naming the file and the problem.
 *
 * Host order and mapping (documented for users writing their own platforms):
 * - the platform's hosts are taken in DOCUMENT ORDER: <host> and <peer> elements where they
 *   appear, <cluster>/<cabinet> expanded as prefix + each radical value + suffix, in the order the
 *   radical lists them ("0-3,8" gives 0,1,2,3,8);
 * - PS hosts are the hosts carrying <prop id="role" value="ps"/> (on a <host>, or on a <cluster>,
 *   which gives it to all its hosts), and the last K hosts of a <cluster> carrying
 *   <prop id="ps_last" value="K"/> (fat trees, where PS hosts sit inside the cluster); server k
 *   is the k-th PS host in document order;
 * - worker w is the w-th host that is not a PS host, in document order;
 * - if the platform marks no host as PS and n_ps > 0, the n_ps hosts right after the workers
 *   serve as PS (so any plain platform with n_workers + n_ps hosts works).
 *
 * Node platforms (multi-GPU servers; platforms/README.md): every GPU host carries the properties
 * `node` (0..N-1), `local_rank` (0..G-1 inside its node) and `nic` (0..R-1, the NIC or rail its
 * inter-node traffic leaves through); hosts without them are flat (their own node). The check
 * requires all three or none on a host, integers >= 0, every node 0..N-1 present with the same G
 * GPUs (local ranks 0..G-1 once each) and the same R NICs, numbered 0..R-1: anything else is
 * SS_EUSAGE naming the file, line and host. Links may say what they are made of with
 * <prop id="fabric" value="ethernet|infiniband|roce|nvlink|pcie"/> (sim/net/fabric.h); another
 * value is SS_EUSAGE too. The run then applies per-fabric factors (sim_fabric_install()).
 */
#ifndef SS_SIM_NET_PLATFORM_CHECK_H
#define SS_SIM_NET_PLATFORM_CHECK_H

#include <stddef.h>

/* What a platform file holds, read without SimGrid (libxml2). */
typedef struct sim_platform_info {
    int n_hosts;       /* all hosts */
    int n_ps_hosts;    /* hosts marked role=ps or ps_last (see above) */
    char **host_names; /* (n_hosts) in document order (see above) */
    int *host_is_ps;   /* (n_hosts) 1 for a PS host */
    int n_nodes;       /* node platforms: nodes (0: a flat platform) */
    int gpus_per_node; /* node platforms: G, the GPU hosts of every node */
    int nics_per_node; /* node platforms: R, the NICs (rails) of every node */
} sim_platform_info;

/* Validates `path` as described above and lists its hosts. SS_EINPUT naming the file (and line)
 * on any problem. Safe to call in any process, any number of times. */
int sim_platform_check(const char *path, sim_platform_info *info);
/* The same on the bytes data[0..size) of a platform file already in memory; `name` names them in
 * messages (as a path would). Only the reading differs from sim_platform_check(): libxml2 parses
 * the bytes as they are (a gzip-compressed file is read by the file variant only). The fuzz
 * target (tests/fuzz/fuzz_platform.c) reads its inputs through it. */
int sim_platform_check_mem(const char *name, const char *data, size_t size,
                           sim_platform_info *info);
void sim_platform_info_free(sim_platform_info *info);

/* Whether SimGrid's ns-3 binding can run `path` (already valid for sim_platform_check()): one
 * zone (Full, Floyd or Dijkstra) of hosts, routers, links and routes, no <cluster>, no nested
 * zone or zoneRoute, no FATPIPE link, every host an end of a one-link route (ns-3 builds its
 * point-to-point links from those and routes packets itself). SS_EUSAGE naming the file, line,
 * why, and what ns-3 accepts. sim_cluster_open() calls it under SIM_NETWORK_NS3. */
int sim_platform_check_ns3(const char *path);

#endif
