/* Helper actors kept between calls (see internal.h).
 *
 * Starting a SimGrid actor maps and protects a fresh stack and ending it unmaps it: measured on
 * an emulation of 8 mlp workers, the double binary tree's one helper per member and call made
 * 60 % of the simulation's own time. A pool keeps its helpers blocked on a semaphore of their
 * own between jobs instead. A job given to an idle helper starts at the same simulated instant
 * as one given to a freshly started actor, so the simulated times are the same. */
#include "sim/net/internal.h"

#include <stdio.h>
#include <stdlib.h>

#include <simgrid/actor.h>
#include <simgrid/semaphore.h>

#include "common/status.h"

typedef struct sim_helper sim_helper;
struct sim_helper {
    sg_sem_t work; /* released once per job, and once to stop */
    void (*fn)(void *);
    void *arg;
    sg_sem_t done;         /* released after fn (may be NULL) */
    sim_helper_pool *pool; /* not read once closed: the pool may be gone */
    sim_helper *next_idle;
    sim_helper *next_all;
    int closed; /* the pool was freed: the helper stops (or is ended by the engine) */
    int gone;   /* the helper has ended (stopped, or ended by the engine with the simulation) */
};

struct sim_helper_pool {
    sg_host_t host;
    char name[48];
    sim_helper *all;  /* every helper started, for sim_helper_pool_free */
    sim_helper *idle; /* blocked on their work semaphore, most recently idle first */
};

sim_helper_pool *sim_helper_pool_create(sg_host_t host, const char *name) {
    SS_ASSERT(host != NULL);
    sim_helper_pool *p = ss_calloc(1, sizeof *p);
    p->host = host;
    snprintf(p->name, sizeof p->name, "%s", name ? name : "helper");
    return p;
}

static void helper_free(sim_helper *h) {
    sg_sem_destroy(h->work);
    free(h);
}

/* Whichever comes last of the pool's release and the helper's end frees the helper. */
static void helper_exit(int failed, void *arg) {
    (void)failed;
    sim_helper *h = arg;
    h->gone = 1;
    if (h->closed) helper_free(h);
}

static void helper_main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    sim_helper *h = sg_actor_self_get_data();
    sg_actor_on_exit(helper_exit, h);
    sg_actor_daemonize(sg_actor_self());
    for (;;) {
        sg_sem_acquire(h->work);
        if (h->closed) return;
        h->fn(h->arg);
        sg_sem_t done = h->done;
        h->fn = NULL;
        h->done = NULL;
        if (h->closed) { /* the pool was freed during the job */
            if (done) sg_sem_release(done);
            return;
        }
        /* idle again before the caller learns of the end: it may start the next job at once */
        h->next_idle = h->pool->idle;
        h->pool->idle = h;
        if (done) sg_sem_release(done);
    }
}

void sim_helper_run(sim_helper_pool *p, void (*fn)(void *), void *arg, sg_sem_t done) {
    SS_ASSERT(p != NULL && fn != NULL);
    sim_helper *h = p->idle;
    while (h && h->gone) /* ended by the engine with an earlier simulation */
        h = h->next_idle;
    if (h) {
        p->idle = h->next_idle;
    } else {
        p->idle = NULL;
        h = ss_calloc(1, sizeof *h);
        h->work = sg_sem_init(0);
        h->pool = p;
        h->next_all = p->all;
        p->all = h;
        sg_actor_t a = sg_actor_init(p->name, p->host);
        sg_actor_set_data(a, h);
        sg_actor_start(a, helper_main, 0, NULL);
    }
    h->fn = fn;
    h->arg = arg;
    h->done = done;
    sg_sem_release(h->work);
}

void sim_helper_pool_free(sim_helper_pool *p) {
    if (!p) return;
    for (sim_helper *h = p->all, *next; h; h = next) {
        next = h->next_all; /* h may be freed below */
        h->closed = 1;
        if (h->gone)
            helper_free(h);
        else if (!h->fn)
            sg_sem_release(h->work); /* inside the simulation: the idle helper wakes and stops */
        /* else: running a job; it stops when the job ends, and frees itself on its exit */
    }
    free(p);
}
