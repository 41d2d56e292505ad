/* Engine start and host mapping (see cluster.h); the platform check is platform_check.c. */
#include "sim/net/cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>

#include "common/status.h"
#include "sim/net/coll/collective.h"
#include "sim/net/fabric.h"

typedef struct sim_group_entry {
    int n;
    int *ranks;
    sim_group *comm;
    struct sim_group_entry *next;
} sim_group_entry;

struct sim_cluster {
    char *platform_path;
    int n_workers;
    int n_ps;
    sg_host_t *worker_hosts; /* (n_workers) */
    sg_host_t *ps_hosts;     /* (n_ps) */
    sim_group *world;
    sim_group_entry *groups;
};

static int engine_created;

/* SimGrid 3.32's engine destructor, run at exit, tears ns-3's node list down and crashes
 * (SIGSEGV in ns3::Simulator::Destroy) after a complete ns-3 run. This handler, registered after
 * the engine, runs before that destructor: it flushes the outputs and ends the process with the
 * status exit() was given, skipping the destructor (the process is ending anyway). */
static void ns3_exit_before_engine(int status, void *arg) {
    (void)arg;
    fflush(NULL);
    _exit(status);
}

/* ---------------------------------------------------------------- model names */

static const char *const model_names[] = {"LV08", "CM02", "ns-3", "SMPI", "TCP-stream"};
#define N_MODELS ((int)(sizeof model_names / sizeof model_names[0]))

int sim_network_model_parse(const char *option, const char *text, sim_network_model *out) {
    for (int i = 0; i < N_MODELS; i++) {
        if (text && strcasecmp(text, model_names[i]) == 0) {
            *out = (sim_network_model)i;
            return SS_OK;
        }
    }
    return ss_error_set(
        SS_EUSAGE, "%s: unknown network model '%s' (valid: LV08, CM02, ns-3, SMPI, TCP-stream)",
        option, text ? text : "");
}

const char *sim_network_model_name(sim_network_model m) {
    return (unsigned)m < (unsigned)N_MODELS ? model_names[m] : "?";
}

/* ---------------------------------------------------------------- cluster */

static int check_open(const sim_cluster_opts *o) {
    if (o->n_workers <= 0)
        return ss_error_set(SS_EUSAGE, "workers: %d requested, need at least 1", o->n_workers);
    if (o->n_ps < 0) return ss_error_set(SS_EUSAGE, "ps: %d requested, need 0 or more", o->n_ps);
    if ((unsigned)o->model >= (unsigned)N_MODELS)
        return ss_error_set(SS_EUSAGE,
                            "network model %d is not LV08, CM02, ns-3, SMPI or TCP-stream",
                            (int)o->model);
    if (engine_created)
        return ss_error_set(SS_EUSAGE, "SimGrid's engine can be created once per process; run "
                                       "each simulation with isolate_call()");
    return SS_OK;
}

/* Which host indices serve as workers (worker_idx, n_workers of them) and servers (ps_idx, n_ps)
 * (platform_check.h, "Host order and mapping"). */
static int map_hosts(const sim_cluster_opts *o, const sim_platform_info *info, int *worker_idx,
                     int *ps_idx) {
    const char *path = o->platform_path;
    int nw = 0, np = 0;
    if (info->n_ps_hosts > 0) {
        for (int i = 0; i < info->n_hosts; i++) {
            if (info->host_is_ps[i] && np < o->n_ps) ps_idx[np++] = i;
            if (!info->host_is_ps[i] && nw < o->n_workers) worker_idx[nw++] = i;
        }
        if (nw < o->n_workers)
            return ss_error_set(SS_EUSAGE,
                                "platform %s has %d hosts (%d worker hosts, %d PS "
                                "hosts); %d workers requested",
                                path, info->n_hosts, info->n_hosts - info->n_ps_hosts,
                                info->n_ps_hosts, o->n_workers);
        if (np < o->n_ps)
            return ss_error_set(SS_EUSAGE, "platform %s has %d PS hosts (role=ps); %d PS requested",
                                path, info->n_ps_hosts, o->n_ps);
        return SS_OK;
    }
    if (info->n_hosts < o->n_workers + o->n_ps) {
        if (o->n_ps)
            return ss_error_set(SS_EUSAGE,
                                "platform %s has %d hosts; %d workers and %d PS requested", path,
                                info->n_hosts, o->n_workers, o->n_ps);
        return ss_error_set(SS_EUSAGE, "platform %s has %d hosts; %d workers requested", path,
                            info->n_hosts, o->n_workers);
    }
    for (int i = 0; i < o->n_workers; i++)
        worker_idx[i] = i;
    for (int k = 0; k < o->n_ps; k++)
        ps_idx[k] = o->n_workers + k;
    return SS_OK;
}

/* SimGrid's engine with the network model's options, on the platform. */
static sim_network_model engine_model;

sim_network_model sim_engine_network_model(void) {
    return engine_model;
}

static void start_engine(const sim_cluster_opts *o) {
    engine_created = 1;
    engine_model = o->model;
    char model[64];
    /* SMPI and TCP-stream are LV08 with the size-dependent factors of sim/net/fabric.cpp
     * (SimGrid's own SMPI model reads them from SMPI's configuration, which a program that is
     * not an SMPI one lacks) */
    const int sized = o->model == SIM_NETWORK_SMPI || o->model == SIM_NETWORK_STREAM;
    snprintf(model, sizeof model, "--cfg=network/model:%s",
             sim_network_model_name(sized ? SIM_NETWORK_LV08 : o->model));
    char *argv[10] = {"syncsim", model, NULL};
    int argc = 2;
    if (o->model == SIM_NETWORK_CM02) argv[argc++] = "--cfg=network/crosstraffic:0";
    if (o->model == SIM_NETWORK_NS3) {
        /* NewReno (ns-3's own default TCP and RFC 6582's loss recovery), and a fixed seed so
         * ns-3's random streams (none drawn by point-to-point links today, but any later model)
         * give the same run every time. */
        argv[argc++] = "--cfg=ns3/TcpModel:" SIM_NS3_TCP_MODEL;
        argv[argc++] = "--cfg=ns3/seed:" SIM_NS3_SEED;
        /* the routed star's two-link routes are for LV08 and CM02; ns-3 dropping them is
         * expected (platform_gen.h), not worth a warning per run */
        argv[argc++] = "--log=res_ns3.thresh:error";
    }
    if (!o->verbose) argv[argc++] = "--log=root.thresh:warning";
    /* one extra SimGrid option from the environment: the sanitizer build's tests set
     * --cfg=contexts/factory:thread (ASan cannot follow SimGrid's own stack switching) */
    char *extra = getenv("SYNCSIM_SIMGRID_CFG");
    if (extra && *extra) argv[argc++] = extra;
    simgrid_init(&argc, argv);
    if (o->model == SIM_NETWORK_NS3) on_exit(ns3_exit_before_engine, NULL);
    simgrid_load_platform(o->platform_path);
    /* ns-3 pays its latencies packet by packet: no calibration factor on top */
    sim_fabric_install(o->model == SIM_NETWORK_LV08     ? SIM_FACTORS_LV08
                       : o->model == SIM_NETWORK_SMPI   ? SIM_FACTORS_SMPI
                       : o->model == SIM_NETWORK_STREAM ? SIM_FACTORS_STREAM
                                                        : SIM_FACTORS_NONE);
}

/* The cluster over the engine's hosts: host indices to SimGrid hosts. */
static int bind_hosts(const sim_cluster_opts *o, const sim_platform_info *info,
                      const int *worker_idx, const int *ps_idx, sim_cluster **out) {
    sim_cluster *c = ss_calloc(1, sizeof *c);
    c->platform_path = strdup(o->platform_path);
    c->n_workers = o->n_workers;
    c->n_ps = o->n_ps;
    c->worker_hosts = ss_malloc((size_t)o->n_workers * sizeof(sg_host_t));
    c->ps_hosts = ss_malloc((size_t)(o->n_ps + 1) * sizeof(sg_host_t));
    const int nw = o->n_workers;
    for (int i = 0; i < nw + o->n_ps; i++) {
        int idx = i < nw ? worker_idx[i] : ps_idx[i - nw];
        sg_host_t h = sg_host_by_name(info->host_names[idx]);
        if (!h) {
            sim_cluster_close(c);
            return ss_error_set(SS_EINPUT, "platform %s: host '%s' was not created by SimGrid",
                                o->platform_path, info->host_names[idx]);
        }
        if (i < nw)
            c->worker_hosts[i] = h;
        else
            c->ps_hosts[i - nw] = h;
    }
    c->world = sim_group_create(c->n_workers, c->worker_hosts);
    *out = c;
    return SS_OK;
}

int sim_cluster_open(const sim_cluster_opts *o, sim_cluster **out) {
    SS_ASSERT(o != NULL && out != NULL);
    *out = NULL;
    int st = check_open(o);
    if (st) return st;
    sim_platform_info info;
    if ((st = sim_platform_check(o->platform_path, &info))) return st;
    if (o->model == SIM_NETWORK_NS3 && (st = sim_platform_check_ns3(o->platform_path))) {
        sim_platform_info_free(&info);
        return st;
    }
    int *worker_idx = ss_malloc((size_t)o->n_workers * sizeof(int));
    int *ps_idx = ss_malloc((size_t)(o->n_ps + 1) * sizeof(int));
    st = map_hosts(o, &info, worker_idx, ps_idx);
    if (st == SS_OK) {
        start_engine(o);
        st = bind_hosts(o, &info, worker_idx, ps_idx, out);
    }
    free(worker_idx);
    free(ps_idx);
    sim_platform_info_free(&info);
    return st;
}

int sim_cluster_simulate(sim_cluster *c, double *end_s) {
    SS_ASSERT(c != NULL);
    simgrid_run();
    if (end_s) *end_s = simgrid_get_clock();
    return SS_OK;
}

void sim_cluster_close(sim_cluster *c) {
    if (!c) return;
    for (sim_group_entry *g = c->groups, *next; g; g = next) {
        next = g->next;
        sim_group_destroy(g->comm);
        free(g->ranks);
        free(g);
    }
    if (c->world) sim_group_destroy(c->world);
    free(c->platform_path);
    free(c->worker_hosts);
    free(c->ps_hosts);
    free(c);
}

int sim_cluster_n_workers(const sim_cluster *c) {
    return c->n_workers;
}
int sim_cluster_n_ps(const sim_cluster *c) {
    return c->n_ps;
}
sg_host_t sim_cluster_worker_host(const sim_cluster *c, int worker) {
    SS_ASSERT(worker >= 0 && worker < c->n_workers);
    return c->worker_hosts[worker];
}
sg_host_t sim_cluster_ps_host(const sim_cluster *c, int server) {
    SS_ASSERT(server >= 0 && server < c->n_ps);
    return c->ps_hosts[server];
}
const sg_host_t *sim_cluster_worker_hosts(const sim_cluster *c) {
    return c->worker_hosts;
}
const sg_host_t *sim_cluster_ps_hosts(const sim_cluster *c) {
    return c->ps_hosts;
}
sim_group *sim_cluster_world(sim_cluster *c) {
    return c->world;
}

sim_group *sim_cluster_group(sim_cluster *c, const int *ranks, int n) {
    SS_ASSERT(c != NULL && ranks != NULL && n > 0);
    for (sim_group_entry *g = c->groups; g; g = g->next) {
        if (g->n == n && memcmp(g->ranks, ranks, (size_t)n * sizeof(int)) == 0) return g->comm;
    }
    sim_group_entry *g = ss_calloc(1, sizeof *g);
    g->n = n;
    g->ranks = ss_malloc((size_t)n * sizeof(int));
    memcpy(g->ranks, ranks, (size_t)n * sizeof(int));
    sg_host_t *hosts = ss_malloc((size_t)n * sizeof(sg_host_t));
    for (int i = 0; i < n; i++) {
        SS_ASSERT(ranks[i] >= 0 && ranks[i] < c->n_workers);
        hosts[i] = c->worker_hosts[ranks[i]];
    }
    g->comm = sim_group_create(n, hosts);
    free(hosts);
    g->next = c->groups;
    c->groups = g;
    return g->comm;
}

/* ---------------------------------------------------------------- actors */

typedef struct spawn_args {
    void (*fn)(void *data);
    void *data;
} spawn_args;

static void spawn_trampoline(int argc, char **argv) {
    (void)argc;
    (void)argv;
    spawn_args *a = sg_actor_self_get_data();
    SS_ASSERT(a != NULL && a->fn != NULL);
    spawn_args copy = *a;
    free(a);
    sg_actor_self_set_data(copy.data);
    copy.fn(copy.data);
}

sg_actor_t sim_actor_spawn(const char *name, int index, sg_host_t host, void (*fn)(void *data),
                           void *data) {
    SS_ASSERT(name != NULL && host != NULL && fn != NULL);
    char full[256];
    snprintf(full, sizeof full, "%s-%d", name, index);
    spawn_args *a = ss_malloc(sizeof *a);
    a->fn = fn;
    a->data = data;
    sg_actor_t actor = sg_actor_init(full, host);
    sg_actor_set_data(actor, a);
    sg_actor_start(actor, spawn_trampoline, 0, NULL);
    return actor;
}
