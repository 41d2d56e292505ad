/* The binary-tree all-reduce: reduce to member 0, broadcast down the same tree, pipelined by
 * segments. */
#include "sim/net/coll/collective.h"

#include <math.h>

#include <simgrid/comm.h>
#include <simgrid/mailbox.h>

#include "sim/net/coll/collective_internal.h"
#include "sim/net/internal.h"

/* Binary tree in heap order: reduce to 0, broadcast from 0; pipelined by segments. */
static void tree(call *k, double bytes) {
    int n = k->c->size, i = k->member;
    int parent = i == 0 ? -1 : (i - 1) / 2;
    int children[2], nc = 0;
    for (int c = 2 * i + 1; c <= 2 * i + 2; c++)
        if (c < n) children[nc++] = c;
    int nseg = k->seg_bytes > 0 ? (int)fmin(ceil(bytes / k->seg_bytes), 1e6) : 1;
    double saved_seg = k->seg_bytes;
    k->seg_bytes = 0; /* segments are explicit here */
    sg_comm_t up = NULL;
    for (int s = 0; s < nseg; s++) {
        double b = coll_part_bytes(bytes, s, nseg);
        for (int c = 0; c < nc; c++)
            coll_exchange(k, -1, 0, children[c], b);
        if (parent >= 0) {
            if (up) sg_comm_wait(up);
            up = sg_mailbox_put_async(coll_mailbox(k, i, parent), &sim_token, coll_wire_bytes(b));
            k->res.bytes_sent += (double)coll_wire_bytes(b);
        }
    }
    if (up) sg_comm_wait(up);
    for (int s = 0; s < nseg; s++) {
        double b = coll_part_bytes(bytes, s, nseg);
        if (parent >= 0) coll_exchange(k, -1, 0, parent, b);
        for (int c = 0; c < nc; c++)
            coll_send_wait(k, children[c], b);
    }
    k->seg_bytes = saved_seg;
}

void coll_run_tree(call *k, double bytes, int channels) {
    (void)channels;
    tree(k, bytes);
}
