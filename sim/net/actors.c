/* What a simulated worker does besides collectives (see actors.h). */
#include "sim/net/actors.h"

#include "common/status.h"
#include "sim/net/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/cond.h>
#include <simgrid/engine.h>
#include <simgrid/mailbox.h>
#include <simgrid/mutex.h>

double sim_now(void) {
    return simgrid_get_clock();
}

void sim_actor_compute(double flops, double seconds) {
    if (flops > 0) sg_actor_execute(flops);
    if (seconds > 0) sg_actor_sleep_for(seconds);
}

void sim_actor_yield(void) {
    sg_actor_yield();
}

/* ---- non-blocking messages ---- */

struct sim_p2p_request {
    sg_comm_t comm; /* until it is observed complete */
    int done;       /* 1 once observed complete (the comm is then released) */
    int status;     /* SS_OK, or the invalid call's status */
    void *payload;  /* a receive's landing place: the sender's token (no data is simulated) */
    sim_coll_result res;
};

static sg_mailbox_t message_mailbox(const sim_group *c, int src, int dst) {
    char name[96];
    snprintf(name, sizeof name, "x%p.%d.%d", (const void *)c, src, dst);
    return sg_mailbox_by_name(name);
}

/* SimGrid moves whole bytes: round, never below one (as the collectives do). */
static long message_wire_bytes(double bytes) {
    long b = lround(bytes);
    return b < 1 ? 1 : b;
}

static sim_p2p_request *message_new(sim_group *c, int member, int peer, double bytes,
                                    const char *what) {
    sim_p2p_request *m = ss_calloc(1, sizeof *m);
    m->res.start_s = m->res.end_s = simgrid_get_clock();
    int n = sim_group_size(c);
    if (member < 0 || member >= n || peer < 0 || peer >= n || peer == member || !(bytes >= 0)) {
        m->status = ss_error_set(SS_EUSAGE,
                                 "%s: member %d, peer %d, %.17g bytes (group of %d: members "
                                 "0..%d, peer other than the member, bytes >= 0)",
                                 what, member, peer, bytes, n, n - 1);
        m->done = 1;
    }
    return m;
}

sim_p2p_request *sim_p2p_send_start(sim_group *c, int member, int dst, double bytes) {
    sim_p2p_request *m = message_new(c, member, dst, bytes, "send_start");
    if (m->done) return m;
    long wire = message_wire_bytes(bytes);
    m->comm = sg_mailbox_put_async(message_mailbox(c, member, dst), &sim_token, wire);
    m->res.bytes_sent = (double)wire;
    return m;
}

sim_p2p_request *sim_p2p_recv_start(sim_group *c, int member, int src, double bytes) {
    sim_p2p_request *m = message_new(c, member, src, bytes, "recv_start");
    if (m->done) return m;
    m->comm = sg_mailbox_get_async(message_mailbox(c, src, member), &m->payload);
    m->res.bytes_recv = (double)message_wire_bytes(bytes);
    return m;
}

static void observe(sim_p2p_request *m, int block) {
    if (m->done) return;
    if (block) {
        sg_comm_wait(m->comm);
    } else if (!sg_comm_test(m->comm)) {
        return;
    }
    m->comm = NULL;
    m->done = 1;
    m->res.end_s = simgrid_get_clock();
}

int sim_p2p_test(sim_p2p_request *m) {
    observe(m, 0);
    return m->done;
}

int sim_p2p_wait(sim_p2p_request *m, sim_coll_result *r) {
    observe(m, 1);
    int rc = m->status;
    if (r) *r = m->res;
    free(m);
    return rc;
}

/* ---- SSP's clocks: one simulated mutex and condition ---- */

struct sim_clocks {
    int n;
    long *clock; /* (n) */
    sg_mutex_t mutex;
    sg_cond_t advanced;
};

sim_clocks *sim_clocks_create(int n_workers) {
    sim_clocks *k = ss_calloc(1, sizeof *k);
    k->n = n_workers;
    k->clock = ss_calloc((size_t)n_workers, sizeof(long));
    k->mutex = sg_mutex_init();
    k->advanced = sg_cond_init();
    return k;
}

void sim_clocks_destroy(sim_clocks *k) {
    if (!k) return;
    sg_cond_destroy(k->advanced);
    sg_mutex_destroy(k->mutex);
    free(k->clock);
    free(k);
}

static long min_clock(const sim_clocks *k) {
    long m = k->clock[0];
    for (int i = 1; i < k->n; i++)
        if (k->clock[i] < m) m = k->clock[i];
    return m;
}

long sim_clocks_wait(sim_clocks *k, int w, long staleness) {
    sg_mutex_lock(k->mutex);
    if (staleness >= 0)
        while (k->clock[w] - min_clock(k) > staleness)
            sg_cond_wait(k->advanced, k->mutex);
    long gap = k->clock[w] - min_clock(k);
    sg_mutex_unlock(k->mutex);
    return gap;
}

void sim_clocks_advance(sim_clocks *k, int w, long clock, long *rounds) {
    sg_mutex_lock(k->mutex);
    k->clock[w] = clock;
    if (rounds && min_clock(k) == clock) (*rounds)++;
    sg_cond_notify_all(k->advanced);
    sg_mutex_unlock(k->mutex);
}
