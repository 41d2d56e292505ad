/* Halving-doubling (Rabenseifner) and recursive doubling, with the fold of the members past a
 * power of two. */
#include "sim/net/coll/collective.h"

#include <math.h>

#include "sim/net/coll/collective_internal.h"

/* The fold of a group of n members into the largest power of two p2 <= n (Rabenseifner's and
 * recursive doubling's): the first 2r members (r = n - p2) pair up, the even one sends its
 * vector to the odd one, which goes on as virtual rank i / 2; the others as i - r. The virtual
 * rank of this member, -1 when folded out; *p2_out, *r_out. */
static int fold_in(call *k, double bytes, int *p2_out, int *r_out) {
    const int n = k->c->size, i = k->member;
    int p2 = 1;
    while (p2 * 2 <= n)
        p2 *= 2;
    const int r = n - p2;
    *p2_out = p2;
    *r_out = r;
    if (i >= 2 * r) return i - r;
    if (i % 2 == 0) {
        coll_exchange(k, i + 1, bytes, -1, 0);
        return -1;
    }
    coll_exchange(k, -1, 0, i - 1, bytes);
    return i / 2;
}

/* The result back to the members folded out. */
static void fold_out(call *k, double bytes, int r) {
    const int i = k->member;
    if (i >= 2 * r) return;
    if (i % 2 == 1)
        coll_exchange(k, i - 1, bytes, -1, 0);
    else
        coll_exchange(k, -1, 0, i + 1, bytes);
}

/* Actual member index of virtual rank v after the fold. */
static int unfolded(int v, int r) {
    return v < r ? 2 * v + 1 : v + r;
}

/* Rabenseifner: fold to a power of two, recursive halving, recursive doubling, unfold. */
static void halving_doubling(call *k, double bytes) {
    int p2, r;
    const int vrank = fold_in(k, bytes, &p2, &r);
    if (vrank >= 0) {
        /* Reduce-scatter by recursive halving: keep half of the current block each step. */
        double block = bytes;
        for (int mask = p2 / 2; mask >= 1; mask /= 2) {
            block /= 2;
            const int partner = unfolded(vrank ^ mask, r);
            coll_exchange(k, partner, block, partner, block);
        }
        /* All-gather by recursive doubling: blocks double back to the whole vector. */
        for (int mask = 1; mask < p2; mask *= 2) {
            const int partner = unfolded(vrank ^ mask, r);
            coll_exchange(k, partner, block, partner, block);
            block *= 2;
        }
    }
    fold_out(k, bytes, r);
}

/* Recursive doubling: log2 p2 steps in which the partners at distance 2^s exchange and reduce
 * the whole vector (MPICH's and OpenMPI's all-reduce for short vectors); fold and unfold as
 * Rabenseifner's. */
static void recursive_doubling(call *k, double bytes) {
    int p2, r;
    const int vrank = fold_in(k, bytes, &p2, &r);
    if (vrank >= 0)
        for (int mask = 1; mask < p2; mask *= 2) {
            const int partner = unfolded(vrank ^ mask, r);
            coll_exchange(k, partner, bytes, partner, bytes);
        }
    fold_out(k, bytes, r);
}

void coll_run_hd(call *k, double bytes, int channels) {
    (void)channels;
    halving_doubling(k, bytes);
}

void coll_run_rd(call *k, double bytes, int channels) {
    (void)channels;
    recursive_doubling(k, bytes);
}
