/* Node structure of a group from host properties (see topology.h). */
#include "sim/net/topology.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/host.h>

#include "common/status.h"

/* One member, sortable by its node, then local rank, then member index. */
typedef struct slot {
    int has_node;       /* 1: node property; 0: flat host, keyed by the host itself */
    long long node_key; /* node property, or the host's address */
    int local_rank;
    int member;
} slot;

static int compare_slots(const void *a, const void *b) {
    const slot *x = a, *y = b;
    if (x->has_node != y->has_node) return x->has_node - y->has_node;
    if (x->node_key != y->node_key) return x->node_key < y->node_key ? -1 : 1;
    if (x->local_rank != y->local_rank) return x->local_rank - y->local_rank;
    return x->member - y->member;
}

/* Property `id` of host h as a non-negative integer: 1 found, 0 absent, -1 invalid. */
static int int_property(sg_host_t h, const char *id, int *out) {
    const char *v = sg_host_get_property_value(h, id);
    if (!v) return 0;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < 0 || x > 1000000) return -1;
    *out = (int)x;
    return 1;
}

static int read_slot(sg_host_t h, int member, slot *s, int *nic) {
    static const char *const ids[3] = {"node", "local_rank", "nic"};
    int v[3] = {0, 0, 0}, found = 0;
    for (int i = 0; i < 3; i++) {
        int rc = int_property(h, ids[i], &v[i]);
        if (rc < 0)
            return ss_error_set(SS_EINPUT,
                                "platform host '%s': property '%s' = '%s' is not a non-negative "
                                "integer",
                                sg_host_get_name(h), ids[i], sg_host_get_property_value(h, ids[i]));
        found += rc;
    }
    if (found != 0 && found != 3)
        return ss_error_set(SS_EINPUT,
                            "platform host '%s': a GPU of a node needs the properties node, "
                            "local_rank and nic together (found %d of them)",
                            sg_host_get_name(h), found);
    s->has_node = found == 3;
    s->node_key = found ? v[0] : (long long)(uintptr_t)h;
    s->local_rank = v[1];
    s->member = member;
    *nic = v[2];
    return SS_OK;
}

/* Numbers the nodes in the order of their first member, and fills node[] and local[]. */
static void number_nodes(sim_topology *t, const slot *s) {
    const int n = t->n;
    int *first = ss_malloc(sizeof(int) * (size_t)n); /* per sorted group: its smallest member */
    int *group_of = ss_malloc(sizeof(int) * (size_t)n);
    int groups = 0;
    for (int i = 0; i < n; i++) {
        int same =
            i > 0 && s[i].has_node == s[i - 1].has_node && s[i].node_key == s[i - 1].node_key;
        if (!same)
            first[groups++] = s[i].member;
        else if (s[i].member < first[groups - 1])
            first[groups - 1] = s[i].member;
        group_of[i] = groups - 1;
        t->local[s[i].member] = same ? t->local[s[i - 1].member] + 1 : 0;
    }
    /* rank of each group by its first member: mark the members that open a group */
    int *rank = ss_malloc(sizeof(int) * (size_t)n);
    int *is_first = ss_calloc((size_t)n, sizeof(int));
    for (int g = 0; g < groups; g++)
        is_first[first[g]] = g + 1;
    for (int m = 0, k = 0; m < n; m++)
        if (is_first[m]) rank[is_first[m] - 1] = k++;
    for (int i = 0; i < n; i++)
        t->node[s[i].member] = rank[group_of[i]];
    t->n_nodes = groups;
    free(first);
    free(group_of);
    free(rank);
    free(is_first);
}

/* per_node, members[] and rails[] when every node holds the same number of members. */
static void index_nodes(sim_topology *t) {
    const int n = t->n;
    int *count = ss_calloc((size_t)t->n_nodes, sizeof(int));
    for (int m = 0; m < n; m++)
        count[t->node[m]]++;
    t->per_node = n / t->n_nodes;
    for (int k = 0; k < t->n_nodes; k++)
        if (count[k] != t->per_node) t->per_node = 0;
    free(count);
    if (!t->per_node) return;
    t->members = ss_malloc(sizeof(int) * (size_t)n);
    t->rails = ss_malloc(sizeof(int) * (size_t)n);
    for (int m = 0; m < n; m++) {
        t->members[t->node[m] * t->per_node + t->local[m]] = m;
        t->rails[t->local[m] * t->n_nodes + t->node[m]] = m;
    }
}

int sim_topology_read(const sg_host_t *hosts, int n, sim_topology **out) {
    *out = NULL;
    SS_ASSERT(n > 0 && hosts != NULL);
    sim_topology *t = ss_calloc(1, sizeof *t);
    t->n = n;
    t->node = ss_malloc(sizeof(int) * (size_t)n);
    t->local = ss_malloc(sizeof(int) * (size_t)n);
    t->nic = ss_malloc(sizeof(int) * (size_t)n);
    slot *s = ss_malloc(sizeof(slot) * (size_t)n);
    t->n_nics = 1;
    for (int m = 0; m < n; m++) {
        int nic = 0, rc = read_slot(hosts[m], m, &s[m], &nic);
        if (rc != SS_OK) {
            free(s);
            sim_topology_free(t);
            return rc;
        }
        t->nic[m] = nic;
        if (nic + 1 > t->n_nics) t->n_nics = nic + 1;
    }
    qsort(s, (size_t)n, sizeof *s, compare_slots);
    number_nodes(t, s);
    free(s);
    index_nodes(t);
    *out = t;
    return SS_OK;
}

void sim_topology_free(sim_topology *t) {
    if (!t) return;
    free(t->node);
    free(t->local);
    free(t->nic);
    free(t->members);
    free(t->rails);
    free(t);
}

int sim_topology_is_flat(const sim_topology *t) {
    return t->n_nodes == t->n;
}
