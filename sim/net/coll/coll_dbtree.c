/* NCCL's double binary tree all-reduce. */
#include "sim/net/coll/collective.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/semaphore.h>

#include "common/status.h"
#include "sim/net/coll/collective_internal.h"
#include "sim/net/internal.h"

/* Children of position p (1..n) in the in-order binary tree: a position of lowest set bit b > 1
 * has p - b/2 on its left and, on its right, p + the largest power of two <= b/2 that stays
 * within n; odd positions are leaves. The root is the largest power of two <= n. */
static void inorder_children(int p, int n, int *left, int *right) {
    const int b = p & -p;
    *left = *right = 0;
    if (b == 1) return;
    *left = p - b / 2;
    for (int step = b / 2; step >= 1; step /= 2) {
        if (p + step <= n) {
            *right = p + step;
            return;
        }
    }
}

/* The member at position p: tree 0 puts member r at position r + 1; tree 1 mirrors it (n even:
 * n - r) or shifts it by one (n odd: (r + 1) mod n + 1), so that the inner nodes (even
 * positions) of one are leaves of the other. */
static int tree_member(int tree, int p, int n) {
    if (tree == 0) return p - 1;
    return n % 2 == 0 ? n - p : (p == 1 ? n - 1 : p - 2);
}

/* The trees: TREE_LINKS ints of each member in each tree, parent then up to three children (-1:
 * none). Tree t has the shape t % 2: the in-order binary tree over the nodes, or its
 * mirror, in which the inner nodes of the other are leaves (two of them: NCCL's double binary
 * tree). On groups of multi-GPU nodes (NCCL's trees since 2.4) the binary tree runs over the
 * nodes, and inside each node the GPUs form a chain whose head joins it: tree 0 starts at local
 * index s and goes up (s, s + 1, ..., mod G), tree 1 starts at G - 1 - s and goes down, so that the
 * two trees of a pair leave the node through different GPUs and NICs; pair p = t / 2 of P starts
 * at s = p G / P, so that more trees (NCCL's channels) leave through other GPUs still. On flat
 * groups every member is a node of its own. chain_member: the member at position l (0: the head)
 * of node k's chain in tree tr whose chain starts at local index `start`. */
static int chain_member(const sim_topology *t, int g, int tr, int start, int k, int l) {
    if (g <= 1) return k;
    const int local = tr % 2 == 0 ? (start + l) % g : ((g - 1 - start - l) % g + g) % g;
    return t->members[k * g + local];
}

/* The links of `trees` trees (2 to SIM_MAX_CHANNELS), made once per count: calls of other
 * counts may run at the same time. */
static const int *dbtree_links(sim_group *c, int trees) {
    SS_ASSERT(trees >= 2 && trees <= SIM_MAX_CHANNELS);
    if (c->tree_links[trees]) return c->tree_links[trees];
    const int n = c->size;
    const sim_topology *t = coll_topology_of(c);
    const int g = t && t->per_node > 1 ? t->per_node : 1;
    const int nodes = g > 1 ? t->n_nodes : n;
    const int pairs = (trees + 1) / 2;
    int *all = ss_malloc(sizeof(int) * TREE_LINKS * (size_t)n * (size_t)trees);
    for (size_t i = 0; i < (size_t)TREE_LINKS * n * trees; i++)
        all[i] = -1;
    for (int tr = 0; tr < trees; tr++) {
        int *nx = all + (size_t)TREE_LINKS * n * tr;
        const int start = (int)((long)(tr / 2) * g / pairs) % g;
        for (int k = 0; k < nodes; k++)
            for (int l = 1; l < g; l++) {
                const int m = chain_member(t, g, tr, start, k, l),
                          up = chain_member(t, g, tr, start, k, l - 1);
                nx[TREE_LINKS * m] = up;
                nx[TREE_LINKS * up + 1] = m;
            }
        for (int p = 1; p <= nodes; p++) {
            int kids[2];
            const int head = chain_member(t, g, tr, start, tree_member(tr % 2, p, nodes), 0);
            inorder_children(p, nodes, &kids[0], &kids[1]);
            for (int j = 0; j < 2; j++) {
                if (!kids[j]) continue;
                const int child =
                    chain_member(t, g, tr, start, tree_member(tr % 2, kids[j], nodes), 0);
                nx[TREE_LINKS * head + 2 + j] = child;
                nx[TREE_LINKS * child] = head;
            }
        }
    }
    c->tree_links[trees] = all;
    return all;
}

/* One tree: reduce to the root (children's parts received together), then broadcast (sent to
 * the children together); segments pipeline the reduction. */
static void tree_half(call *k, const int *nx, double bytes) {
    const int parent = nx[0];
    const int nseg = k->seg_bytes > 0 ? (int)fmin(ceil(bytes / k->seg_bytes), 1e6) : 1;
    k->seg_bytes = 0; /* segments are explicit here */
    sg_comm_t up = NULL;
    for (int s = 0; s < nseg; s++) {
        const double b = coll_part_bytes(bytes, s, nseg);
        step st;
        st.n = 0;
        for (int j = 1; j < TREE_LINKS; j++)
            if (nx[j] >= 0) coll_post_recv(k, &st, nx[j], b);
        coll_step_wait(&st);
        if (parent >= 0) {
            if (up) sg_comm_wait(up);
            coll_proto_pause(k, parent);
            step one;
            one.n = 0;
            coll_post_send(k, &one, parent, b);
            up = one.comms[0];
        }
    }
    if (up) sg_comm_wait(up);
    for (int s = 0; s < nseg; s++) {
        const double b = coll_part_bytes(bytes, s, nseg);
        if (parent >= 0) coll_exchange(k, -1, 0, parent, b);
        double pause_s = 0; /* the protocol's step to the slowest child */
        for (int j = 1; j < TREE_LINKS; j++)
            if (nx[j] >= 0) pause_s = fmax(pause_s, coll_proto_step_s(k, nx[j]));
        if (pause_s > 0) sg_actor_sleep_for(pause_s);
        step st;
        st.n = 0;
        for (int j = 1; j < TREE_LINKS; j++)
            if (nx[j] >= 0) coll_post_send(k, &st, nx[j], b);
        coll_step_wait(&st);
    }
}

/* Trees after the first run in helper actors on the member's host, at the same time. */
typedef struct tree_job {
    call k;
    const int *nx;
    double bytes;
    sg_sem_t done;
} tree_job;

static void tree_helper(void *arg) {
    tree_job *j = arg;
    tree_half(&j->k, j->nx, j->bytes);
}

/* The vector in `trees` parts, part t reduced and broadcast along tree t (2 at least: the double
 * binary tree). */
static void coll_dbtree(call *k, double bytes, int trees) {
    sim_group *c = k->c;
    const int n = c->size;
    const int *links = dbtree_links(c, trees);
    tree_job *jobs = ss_calloc((size_t)trees, sizeof *jobs);
    if (!c->helpers) c->helpers = ss_calloc((size_t)c->size, sizeof *c->helpers);
    if (!c->helpers[k->member])
        c->helpers[k->member] = sim_helper_pool_create(c->hosts[k->member], "dbtree");
    for (int t = 1; t < trees; t++) {
        tree_job *j = &jobs[t];
        j->k = *k;
        memset(&j->k.res, 0, sizeof j->k.res);
        j->k.channel = t;
        j->nx = links + (size_t)TREE_LINKS * ((size_t)n * t + k->member);
        j->bytes = coll_part_bytes(bytes, t, trees);
        j->done = sg_sem_init(0);
        sim_helper_run(c->helpers[k->member], tree_helper, j, j->done);
    }
    tree_half(k, links + (size_t)TREE_LINKS * k->member, coll_part_bytes(bytes, 0, trees));
    for (int t = 1; t < trees; t++) {
        sg_sem_acquire(jobs[t].done);
        sg_sem_destroy(jobs[t].done);
        k->res.bytes_sent += jobs[t].k.res.bytes_sent;
        k->res.bytes_recv += jobs[t].k.res.bytes_recv;
    }
    free(jobs);
}

void coll_run_dbtree(call *k, double bytes, int channels) {
    coll_dbtree(k, bytes, channels > 2 ? channels : 2);
}
