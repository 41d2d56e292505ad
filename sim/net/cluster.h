/* Cluster set-up: validate a SimGrid platform, start the engine on it, and map workers and
 * parameter-server (PS) hosts onto its hosts.
 *
 *     sim_cluster_opts o = {.platform_path = "platforms/cluster_25gbps_16.xml", .n_workers = 16};
 *     sim_cluster *c;
 *     if (sim_cluster_open(&o, &c) != SS_OK) return ...;       // once per process: see isolate.h
 *     for (int w = 0; w < 16; w++)
 *         sim_actor_spawn("worker", w, sim_cluster_worker_host(c, w), worker_main, &args[w]);
 *     double end_s; sim_cluster_run(c, &end_s);                 // returns when all actors ended
 *     sim_cluster_close(c);
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
#ifndef SS_SIM_CLUSTER_H
#define SS_SIM_CLUSTER_H

#include <simgrid/forward.h>
#include <stddef.h>

/* SimGrid network models. LV08 (SimGrid's default) is calibrated on TCP: 0.97 x bandwidth and
 * 13.01 x latency. CM02 is the plain max-min flow model (time = latency + size / bandwidth, no
 * factors, no cross-traffic): use it for closed-form checks. NS3 is SimGrid's binding to the ns-3
 * packet-level simulator: every flow is a real TCP connection (NewReno, fixed seed 1) over
 * point-to-point links with drop-tail queues, so slow start, incast losses and retransmissions
 * appear; it is slower and accepts fewer platform forms (sim_platform_check_ns3()). SMPI is
 * SimGrid's MPI calibration of LV08: TCP latency and bandwidth factors that depend on the
 * message size (about 2 x latency below 64 KiB instead of 13.01), for small messages over TCP.
 * TCP-stream is SMPI below 64 KiB and a persistent TCP stream from there (latency x 1, bandwidth
 * x 1448/1538), for NCCL over sockets (sim/net/fabric.h). */
typedef enum sim_network_model {
    SIM_NETWORK_LV08 = 0, /* default */
    SIM_NETWORK_CM02 = 1,
    SIM_NETWORK_NS3 = 2, /* "ns-3" */
    SIM_NETWORK_SMPI = 3,
    SIM_NETWORK_STREAM = 4 /* "TCP-stream" */
} sim_network_model;

/* The ns-3 settings every ns-3 run uses (SimGrid's ns3/TcpModel and ns3/seed). */
#define SIM_NS3_TCP_MODEL "NewReno"
#define SIM_NS3_SEED      "1"

/* "LV08", "CM02", "ns-3", "SMPI" or "TCP-stream" (case-insensitive); SS_EUSAGE naming `option` and
 * the valid values. */
int sim_network_model_parse(const char *option, const char *text, sim_network_model *out);
const char *sim_network_model_name(sim_network_model m);

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

typedef struct sim_cluster_opts {
    const char *platform_path; /* SimGrid platform XML */
    int n_workers;             /* > 0 */
    int n_ps;                  /* PS hosts to map; 0 = none */
    sim_network_model model;   /* SIM_NETWORK_LV08 (0) by default */
    int verbose;               /* 0: SimGrid logs warnings and errors only; 1: its info too */
} sim_cluster_opts;

typedef struct sim_cluster sim_cluster; /* opaque */

/* Validates the platform (sim_platform_check), checks it has enough hosts ("platform F has 8
 * hosts; 16 workers requested": SS_EUSAGE), initializes SimGrid with the model, loads the
 * platform and maps the hosts. SimGrid's engine exists once per process: a second call in the same
 * process returns SS_EUSAGE (run each simulation with sim_run_isolated()). */
int sim_cluster_open(const sim_cluster_opts *o, sim_cluster **out);
/* Runs the simulation until every non-daemon actor has ended; *end_s = simulated clock then. */
int sim_cluster_run(sim_cluster *c, double *end_s);
/* Frees the mapping and every group made by sim_cluster_group(); SimGrid's engine itself lives on
 * until the process exits. */
void sim_cluster_close(sim_cluster *c);

int sim_cluster_n_workers(const sim_cluster *c);
int sim_cluster_n_ps(const sim_cluster *c);
sg_host_t sim_cluster_worker_host(const sim_cluster *c, int worker); /* 0 <= worker < n */
sg_host_t sim_cluster_ps_host(const sim_cluster *c, int server);     /* 0 <= server < n_ps */
const sg_host_t *sim_cluster_worker_hosts(const sim_cluster *c);     /* (n_workers) */
const sg_host_t *sim_cluster_ps_hosts(const sim_cluster *c);         /* (n_ps) */
const char *sim_cluster_platform_path(const sim_cluster *c);

/* Starts an actor named "<name>-<index>" on `host` running fn(data) (SimGrid's C actors take
 * argc/argv; this passes a pointer instead). Callable before sim_cluster_run() and from actors. */
sg_actor_t sim_actor_spawn(const char *name, int index, sg_host_t host, void (*fn)(void *data),
                           void *data);

/* Forward declaration (collective.h): a group of members that run collectives together. */
typedef struct sim_comm sim_comm;

/* The group of all workers; member index = worker rank. Owned by the cluster. */
sim_comm *sim_cluster_world(sim_cluster *c);
/* The group of workers ranks[0..n-1] (member i = ranks[i]), created on the first call and the SAME
 * object for every later call with the same list in the same order, so every member of a DS-Sync
 * group can ask for it independently from its own actor. Owned by the cluster. */
sim_comm *sim_cluster_group(sim_cluster *c, const int *ranks, int n);

#endif
