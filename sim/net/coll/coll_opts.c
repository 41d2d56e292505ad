/* The collectives' options: names and parsing (see coll_opts.h). */
#include "sim/net/coll/coll_opts.h"

#include "common/status.h"

#include <stdio.h>
#include <strings.h>

static const char *const algo_names[] = {"ring",        "ring-coarse", "hd", "tree", "hier",
                                         "hier-coarse", "dbtree",      "rd", "auto"};
#define ALGO_COUNT ((int)(sizeof algo_names / sizeof algo_names[0]))

const char *sim_allreduce_algo_names(const char *sep, char *buf, size_t n) {
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < ALGO_COUNT && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? sep : "", algo_names[i]);
    return buf;
}

int sim_allreduce_algo_parse(const char *option, const char *text, sim_allreduce_algo *out) {
    if (text && strcasecmp(text, "halving-doubling") == 0) text = "hd";
    for (int i = 0; i < ALGO_COUNT; i++) {
        if (text && strcasecmp(text, algo_names[i]) == 0) {
            *out = (sim_allreduce_algo)i;
            return SS_OK;
        }
    }
    char valid[128];
    return ss_error_set(SS_EUSAGE, "%s: unknown all-reduce algorithm '%s' (valid: %s)", option,
                        text ? text : "", sim_allreduce_algo_names(", ", valid, sizeof valid));
}

const char *sim_allreduce_algo_name(sim_allreduce_algo a) {
    return (unsigned)a < (unsigned)ALGO_COUNT ? algo_names[a] : "?";
}

static const char *const protocol_names[] = {"auto", "LL", "LL128", "Simple"};

int sim_nccl_protocol_parse(const char *option, const char *text, sim_nccl_protocol *out) {
    for (int i = 0; i < 4; i++)
        if (text && !strcasecmp(text, protocol_names[i])) {
            *out = (sim_nccl_protocol)i;
            return SS_OK;
        }
    return ss_error_set(SS_EUSAGE, "%s: unknown protocol '%s' (valid: auto, LL, LL128, Simple)",
                        option, text ? text : "");
}

const char *sim_nccl_protocol_name(sim_nccl_protocol p) {
    return (unsigned)p < 4 ? protocol_names[p] : "?";
}

int coll_is_nccl_algo(sim_allreduce_algo requested) {
    return requested == SIM_ALLREDUCE_AUTO || requested == SIM_ALLREDUCE_HIER ||
           requested == SIM_ALLREDUCE_HIER_COARSE || requested == SIM_ALLREDUCE_DBTREE;
}

int coll_takes_channels(sim_allreduce_algo requested) {
    return requested == SIM_ALLREDUCE_RING || requested == SIM_ALLREDUCE_DBTREE ||
           requested == SIM_ALLREDUCE_AUTO;
}

int coll_check_channels(int channels, sim_allreduce_algo algo, int ps, const char *collective) {
    if (channels > 1 && (ps || !coll_takes_channels(algo)))
        return ss_error_set(SS_EUSAGE,
                            "--channels %d applies to --collective ring, dbtree or auto, not %s",
                            channels, collective);
    return SS_OK;
}

int coll_takes_protocol(sim_allreduce_algo requested, sim_nccl_protocol p) {
    return coll_is_nccl_algo(requested) ||
           (p != SIM_PROTOCOL_AUTO &&
            (requested == SIM_ALLREDUCE_RING || requested == SIM_ALLREDUCE_RING_COARSE));
}
