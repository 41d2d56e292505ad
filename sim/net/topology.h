/* Node structure of a group of members, read from the platform's host properties.
 *
 * A GPU host of a node platform carries <prop id="node">, <prop id="local_rank"> and
 * <prop id="nic"> (platforms/README.md); a host without them is flat: its own node, local rank
 * 0, NIC 0. The hierarchical and multi-channel collectives (collective.h) read the group's
 * structure through this module:
 *
 *     sim_topology *t;
 *     if (sim_topology_read(hosts, n, &t) != SS_OK) return ...;       // SS_EINPUT: bad property
 *     if (t->per_node > 1) member m = t->members[node * t->per_node + local] ...
 *     sim_topology_free(t);
 *
 * Nodes are numbered in the order their first member appears in the group; inside a node the
 * members are ordered by their local_rank property (then by member index).
 */
#ifndef SS_SIM_TOPOLOGY_H
#define SS_SIM_TOPOLOGY_H

#include <simgrid/forward.h>

typedef struct sim_topology {
    int n;        /* members */
    int n_nodes;  /* distinct nodes among the members */
    int per_node; /* members on every node when all nodes hold the same count, else 0 */
    int n_nics;   /* largest nic property + 1 among the members (1 on flat platforms) */
    int *node;    /* (n) the member's node, 0..n_nodes-1 */
    int *local;   /* (n) the member's index inside its node among the group's members there */
    int *nic;     /* (n) the member's nic property (0 when absent) */
    int *members; /* (n) when per_node > 0: members[node * per_node + local] = member */
    int *rails;   /* (n) when per_node > 0: rails[local * n_nodes + node] = member (rail groups) */
} sim_topology;

/* Reads the properties of hosts[0..n-1]. SS_EINPUT names the host and property when a value is
 * not a non-negative integer, or when a host has some of node/local_rank/nic but not all. */
int sim_topology_read(const sg_host_t *hosts, int n, sim_topology **out);
void sim_topology_free(sim_topology *t);

/* 1 when no two members share a node (every member is its own node: nothing hierarchical). */
int sim_topology_is_flat(const sim_topology *t);

#endif
