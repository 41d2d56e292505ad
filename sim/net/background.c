#include "sim/net/background.h"
#include "common/rng.h"
#include "common/status.h"
#include "sim/net/cluster.h"
#include "sim/net/internal.h"

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct bg_host {
    struct sim_background *bg;
    int index; /* in hosts[] */
    rng draws; /* destination choices of this host's sender */
} bg_host;

struct sim_background {
    double load;
    int n_hosts;
    sg_host_t *hosts;        /* (n_hosts) workers then servers */
    sg_mailbox_t *mailboxes; /* (n_hosts) "bg.<i>" */
    bg_host *per_host;       /* (n_hosts) */
    double bytes;            /* sent so far */
};

static void bg_receiver(void *arg) {
    bg_host *h = arg;
    sg_mailbox_t box = h->bg->mailboxes[h->index];
    for (;;)
        sg_mailbox_get(box);
}

static void bg_sender(void *arg) {
    bg_host *h = arg;
    struct sim_background *bg = h->bg;
    sg_host_t self = bg->hosts[h->index];
    for (;;) {
        double start = simgrid_get_clock();
        int dst = (int)rng_below(&h->draws, (uint64_t)(bg->n_hosts - 1));
        if (dst >= h->index) dst++;
        double bw_Bps = sg_host_get_route_bandwidth(self, bg->hosts[dst]);
        double bytes = bg->load * bw_Bps * SIM_BACKGROUND_PERIOD_S;
        if (bytes < 1) bytes = 1;
        sg_mailbox_put(bg->mailboxes[dst], &sim_token, (long)bytes);
        bg->bytes += bytes;
        double rest = start + SIM_BACKGROUND_PERIOD_S - simgrid_get_clock();
        if (rest > 0) sg_actor_sleep_for(rest);
    }
}

int sim_background_start(const sg_host_t *hosts, int n, double load, uint64_t seed,
                         sim_background **out) {
    *out = NULL;
    if (!(load > 0 && load <= 1))
        return ss_error_set(SS_EUSAGE, "--background: load %g is not in (0, 1]", load);
    if (n < 2) return ss_error_set(SS_EUSAGE, "--background needs at least two hosts");
    struct sim_background *bg = ss_calloc(1, sizeof *bg);
    bg->load = load;
    bg->n_hosts = n;
    bg->hosts = ss_calloc((size_t)n, sizeof(sg_host_t));
    bg->mailboxes = ss_calloc((size_t)n, sizeof(sg_mailbox_t));
    bg->per_host = ss_calloc((size_t)n, sizeof(bg_host));
    for (int i = 0; i < n; i++)
        bg->hosts[i] = hosts[i];
    for (int i = 0; i < bg->n_hosts; i++) {
        char name[32];
        snprintf(name, sizeof name, "bg.%d", i);
        bg->mailboxes[i] = sg_mailbox_by_name(name);
        bg_host *h = &bg->per_host[i];
        h->bg = bg;
        h->index = i;
        rng_seed(&h->draws, seed, RNG_STREAM_NETWORK + (1u << 19) + (uint64_t)i);
        sg_actor_daemonize(sim_actor_spawn("bg-recv", i, bg->hosts[i], bg_receiver, h));
        sg_actor_daemonize(sim_actor_spawn("bg-send", i, bg->hosts[i], bg_sender, h));
    }
    *out = bg;
    return SS_OK;
}

void sim_background_free(sim_background *bg) {
    if (!bg) return;
    free(bg->hosts);
    free(bg->mailboxes);
    free(bg->per_host);
    free(bg);
}

double sim_background_bytes(const sim_background *bg) {
    return bg ? bg->bytes : 0;
}
