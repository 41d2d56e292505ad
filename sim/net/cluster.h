/* Cluster set-up: validate a SimGrid platform, start the engine on it, and map workers and
 * parameter-server (PS) hosts onto its hosts.
 *
 *     sim_cluster_opts o = {.platform_path = "platforms/cluster_25gbps_16.xml", .n_workers = 16};
 *     sim_cluster *c;
 *     if (sim_cluster_open(&o, &c) != SS_OK) return ...;       // once per process: see isolate.h
 *     for (int w = 0; w < 16; w++)
 *         sim_actor_spawn("worker", w, sim_cluster_worker_host(c, w), worker_main, &args[w]);
 *     double end_s; sim_cluster_simulate(c, &end_s);                 // returns when all actors
 * ended sim_cluster_close(c);
 *
 * The platform is checked first (platform_check.h: what a valid platform is, and which host is
 * which worker and server).
 */
#ifndef SS_SIM_CLUSTER_H
#define SS_SIM_CLUSTER_H

#include "sim/net/platform_check.h"

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
/* The model the engine was started with (LV08 before). */
sim_network_model sim_engine_network_model(void);

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
 * process returns SS_EUSAGE (run each simulation with isolate_call()). */
int sim_cluster_open(const sim_cluster_opts *o, sim_cluster **out);
/* Runs the simulation until every non-daemon actor has ended; *end_s = simulated clock then. */
int sim_cluster_simulate(sim_cluster *c, double *end_s);
/* Frees the mapping and every group made by sim_cluster_group(); SimGrid's engine itself lives on
 * until the process exits. */
void sim_cluster_close(sim_cluster *c);

int sim_cluster_n_workers(const sim_cluster *c);
int sim_cluster_n_ps(const sim_cluster *c);
sg_host_t sim_cluster_worker_host(const sim_cluster *c, int worker); /* 0 <= worker < n */
sg_host_t sim_cluster_ps_host(const sim_cluster *c, int server);     /* 0 <= server < n_ps */
const sg_host_t *sim_cluster_worker_hosts(const sim_cluster *c);     /* (n_workers) */
const sg_host_t *sim_cluster_ps_hosts(const sim_cluster *c);         /* (n_ps) */

/* Starts an actor named "<name>-<index>" on `host` running fn(data) (SimGrid's C actors take
 * argc/argv; this passes a pointer instead). Callable before sim_cluster_simulate() and from
 * actors. */
sg_actor_t sim_actor_spawn(const char *name, int index, sg_host_t host, void (*fn)(void *data),
                           void *data);

/* Forward declaration (collective.h): a group of members that run collectives together. */
typedef struct sim_group sim_group;

/* The group of all workers; member index = worker rank. Owned by the cluster. */
sim_group *sim_cluster_world(sim_cluster *c);
/* The group of workers ranks[0..n-1] (member i = ranks[i]), created on the first call and the SAME
 * object for every later call with the same list in the same order, so every member of a DS-Sync
 * group can ask for it independently from its own actor. Owned by the cluster. */
sim_group *sim_cluster_group(sim_cluster *c, const int *ranks, int n);

#endif
