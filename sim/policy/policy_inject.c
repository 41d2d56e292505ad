/* SelSync's data injection messages, all in flight together (see policy_inject.h). */
#include "sim/policy/policy_inject.h"

#include "common/status.h"

#include <stdlib.h>
#include <string.h>

/* Waits for rq[0..n-1] in order (each started already): the last one to complete bounds the
 * time. Returns the first error, after waiting for them all. */
static int wait_all(const exchange *ex, exchange_request **rq, int n, double *bytes_sent) {
    int status = SS_OK;
    for (int i = 0; i < n; i++) {
        exchange_result r;
        int rc = ex->ops->wait(ex->self, rq[i], &r);
        if (rc != SS_OK && status == SS_OK) status = rc;
        if (rc == SS_OK && bytes_sent) *bytes_sent += r.bytes_sent;
    }
    return status;
}

int policy_inject_exchange(const exchange *ex, exchange_group *world, int w, int n,
                           const uint8_t *chosen, double bytes, size_t count, inject_times *t) {
    memset(t, 0, sizeof *t);
    if (n < 2) return SS_OK;
    exchange_request **sends = ss_malloc(sizeof *sends * (size_t)n);
    exchange_request **recvs = ss_malloc(sizeof *recvs * (size_t)n);
    int n_sends = 0, n_recvs = 0;
    const double t0 = ex->ops->now(ex->self);
    /* receives first, in rank order of the senders, then the own sends in rank order of the
     * destinations: SimGrid starts a flow when both sides are posted, at the same instant */
    for (int s = 0; s < n; s++)
        if (chosen[s] && s != w)
            recvs[n_recvs++] = ex->ops->recv_start(ex->self, world, w, s, NULL, count, bytes);
    if (chosen[w])
        for (int d = 0; d < n; d++)
            if (d != w)
                sends[n_sends++] = ex->ops->send_start(ex->self, world, w, d, NULL, count, bytes);
    int st = wait_all(ex, sends, n_sends, &t->bytes_sent);
    const double t1 = ex->ops->now(ex->self);
    int st2 = wait_all(ex, recvs, n_recvs, NULL);
    t->send_s = t1 - t0;
    t->recv_wait_s = ex->ops->now(ex->self) - t1;
    free(sends);
    free(recvs);
    return st != SS_OK ? st : st2;
}
