/* Parameter server: K server actors (the model sharded evenly over them) and the worker-side
 * push/pull calls, over SimGrid mailboxes.
 *
 *     sim_ps_opts po = {.n_workers = n, .worker_hosts = sim_cluster_worker_hosts(c),
 *                       .n_servers = k, .server_hosts = sim_cluster_ps_hosts(c),
 *                       .mode = SIM_PS_SYNC, .hooks = {.ctx = emu, .on_push = apply_grad}};
 *     sim_ps *ps; sim_ps_start(&po, &ps);         // before sim_cluster_simulate(): spawns the
 * servers
 *     // worker actor w, step i:
 *     sim_ps_push(ps, w, grad_bytes, i, grad_ptr, &r);   // returns when all shards arrived
 *     sim_ps_pull(ps, w, param_bytes, i, &r);            // returns when all shards came back
 *     // after sim_cluster_simulate(): sim_ps_free(ps);
 *
 * Messages: worker w and server s talk through mailboxes "ps<id>.w<w>.s<s>" (push, pull request)
 * and "ps<id>.s<s>.w<w>" (pull reply). A push of M bytes sends shard s of size M/K (the remainder
 * spread over the first shards) to each server at once, so N workers pushing to one server share
 * its incoming link (incast: about N.M/B). A pull sends a request of `request_bytes` to every
 * server and receives each server's shard of M.
 *
 * The server loop and its hooks (how a policy makes the PS apply updates as they arrive):
 * - each server always has one receive posted per worker and handles messages in the order they
 *   complete (a simulated-time order);
 * - at each push arrival it calls hooks.on_push(ctx, server, worker, round, payload, now): the
 *   emulator applies that worker's gradient to shard `server` right then;
 * - a pull request of round r is answered when it is ready: SIM_PS_SYNC (BSP): once every worker
 *   has pushed round r to this server; SIM_PS_ASYNC (SSP/ASP): at once (the policy enforces the
 *   staleness bound itself, e.g. by waiting before it pulls); hooks.pull_ready, if set, replaces
 *   the mode's rule (FedAvg with sampled clients). Waiting pulls are re-examined after every push.
 *   hooks.on_pull(ctx, server, worker, round, now) is called when the reply leaves the server.
 * Hooks run in the server's actor: they must not block. Servers are daemons: the simulation ends
 * when the workers end.
 */
#ifndef SS_SIM_PS_H
#define SS_SIM_PS_H

#include <stdint.h>
#include <simgrid/forward.h>

#include "sim/net/coll/collective.h"

typedef enum sim_ps_mode {
    SIM_PS_SYNC = 0, /* a pull of round r waits for every worker's push of round r */
    SIM_PS_ASYNC = 1 /* a pull is answered at once */
} sim_ps_mode;

typedef struct sim_ps_hooks {
    void *ctx; /* passed back to every hook */
    /* A push's shard arrived at `server` at simulated time now_s. payload: the pointer given to
     * sim_ps_push (the emulator's gradient), NULL in replay. May be NULL. */
    void (*on_push)(void *ctx, int server, int worker, int64_t round, const void *payload,
                    double now_s);
    /* The reply to a pull leaves `server` at now_s. May be NULL. */
    void (*on_pull)(void *ctx, int server, int worker, int64_t round, double now_s);
    /* 1 if a pull of `round` by `worker` may be answered now; NULL = the mode's rule. */
    int (*pull_ready)(void *ctx, int server, int worker, int64_t round);
} sim_ps_hooks;

typedef struct sim_ps_opts {
    int n_workers;                 /* > 0 */
    const sg_host_t *worker_hosts; /* (n_workers) */
    int n_servers;                 /* K > 0 */
    const sg_host_t *server_hosts; /* (n_servers) */
    sim_ps_mode mode;
    double request_bytes; /* size of a pull request (0: a latency-only control message) */
    sim_ps_hooks hooks;
    /* > 0: each push shard and pull reply holds the network as if it were f times its size, f
     * lognormal with mean 1 and this CV, drawn per message from `seed` (common/jitter.h); the
     * bytes counted stay the nominal ones */
    double wire_jitter;
    uint64_t seed;
} sim_ps_opts;

typedef struct sim_ps sim_ps; /* opaque */

/* Spawns the K server actors (daemons). Call before sim_cluster_simulate() or from an actor. */
int sim_ps_start(const sim_ps_opts *o, sim_ps **out);
/* Frees the PS; after the simulation has ended. */
void sim_ps_free(sim_ps *ps);

/* Worker `worker` pushes `bytes` (sharded) for `round`; returns when every shard has arrived
 * (after the servers' on_push hooks ran). */
int sim_ps_push(sim_ps *ps, int worker, double bytes, int64_t round, const void *payload,
                sim_coll_result *r);
/* Worker `worker` pulls `bytes` (sharded) for `round`; returns when every shard has arrived. */
int sim_ps_pull(sim_ps *ps, int worker, double bytes, int64_t round, sim_coll_result *r);
/* Push then pull of the same round (BSP over a PS); r covers both. */
int sim_ps_push_pull(sim_ps *ps, int worker, double bytes, int64_t round, const void *payload,
                     sim_coll_result *r);
/* Asynchronous push (SSP: push, keep computing, pull later): returns at once; `done` (may be
 * NULL) is called when every shard has arrived; wait with sim_request_wait(). A worker's pushes
 * and pulls reach each server in the order they were issued. */
sim_request *sim_ps_push_async(sim_ps *ps, int worker, double bytes, int64_t round,
                               const void *payload, sim_done_fn done, void *ctx);

#endif
