/* The policy configuration's key/value codec (policy_codec.h). */
#include "sim/policy/policy_codec.h"
#include "common/number.h"
#include "common/status.h"
#include "sim/policy/policy_registry.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef enum codec_type {
    CODEC_INT,
    CODEC_LONG,
    CODEC_U64,
    CODEC_DOUBLE,
    CODEC_ENUM,       /* an int field by the names of `names` */
    CODEC_KIND,       /* policy_kind by its registry name */
    CODEC_COLLECTIVE, /* use_ps + coll.algo: "ps" or an all-reduce algorithm */
    CODEC_COMPUTE,    /* sim_compute_cfg */
    CODEC_SLOWDOWN,   /* pc->slowdown: "none" or N comma-separated factors */
    CODEC_OPTION      /* a policy option's field, as its descriptor (trace_key) says */
} codec_type;

typedef struct codec_key {
    const char *key;
    codec_type type;
    size_t offset;
    const policy_enum_name *names;
    int required;
} codec_key;

#define PO(field) offsetof(policy_config, field)

/* The keys of the format, in the order written. Policy options name their key in the registry
 * (trace_key); those not listed here are written after these and optional when read. */
static const codec_key format_keys[] = {
    {"policy", CODEC_KIND, 0, NULL, 1},
    {"workers", CODEC_INT, PO(workers), NULL, 1},
    {"steps", CODEC_LONG, PO(steps), NULL, 1},
    {"batch", CODEC_INT, PO(batch), NULL, 1},
    {"seed", CODEC_U64, PO(seed), NULL, 1},
    {"eval_every", CODEC_LONG, PO(eval_every), NULL, 1},
    {"collective", CODEC_COLLECTIVE, 0, NULL, 1},
    {"segment_bytes", CODEC_DOUBLE, PO(coll.segment_bytes), NULL, 1},
    {"ps_servers", CODEC_INT, PO(ps_servers), NULL, 1},
    {"compute", CODEC_COMPUTE, PO(compute), NULL, 1},
    {"staleness", CODEC_OPTION, 0, NULL, 1},
    {"local_steps", CODEC_OPTION, 0, NULL, 1},
    {"client_fraction", CODEC_OPTION, 0, NULL, 1},
    {"post_local_after", CODEC_OPTION, 0, NULL, 1},
    {"delta", CODEC_OPTION, 0, NULL, 1},
    {"ewma_window", CODEC_OPTION, 0, NULL, 1},
    {"ewma_alpha", CODEC_OPTION, 0, NULL, 1},
    {"selsync_variant", CODEC_OPTION, 0, NULL, 1},
    {"aggregation", CODEC_OPTION, 0, NULL, 1},
    {"selsync_order", CODEC_OPTION, 0, NULL, 1},
    {"flag_bytes", CODEC_DOUBLE, PO(flag_bytes), NULL, 1},
    {"inject_alpha", CODEC_OPTION, 0, NULL, 1},
    {"inject_beta", CODEC_OPTION, 0, NULL, 1},
    {"group_size", CODEC_OPTION, 0, NULL, 1},
    {"grouping", CODEC_OPTION, 0, NULL, 1},
    {"loss_tolerance", CODEC_OPTION, 0, NULL, 1},
    {"deadline_s", CODEC_DOUBLE, PO(deadline_s), NULL, 1}, /* the option: a duration as written */
    {"chunk_bytes", CODEC_OPTION, 0, NULL, 1},
    {"priority", CODEC_OPTION, 0, NULL, 1},
    {"drop_keep_local", CODEC_INT, PO(drop_keep_local), NULL, 1}, /* the option: zero | local */
    {"straggler_prob", CODEC_DOUBLE, PO(straggler_prob), NULL, 1},
    {"straggler_factor", CODEC_DOUBLE, PO(straggler_factor), NULL, 1},
    {"background_load", CODEC_DOUBLE, PO(background_load), NULL, 1},
    {"slowdown", CODEC_SLOWDOWN, PO(slowdown), NULL, 1},
};
#define FORMAT_KEYS ((int)(sizeof format_keys / sizeof format_keys[0]))

static codec_key keys[POLICY_CODEC_MAX_KEYS];
static int n_keys;
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;

/* A policy option's key takes the type, field and names of its descriptor. */
static codec_key option_key(const policy_option *o, int required) {
    static const codec_type by_type[] = {[POLICY_OPTION_INT] = CODEC_INT,
                                         [POLICY_OPTION_LONG] = CODEC_LONG,
                                         [POLICY_OPTION_DOUBLE] = CODEC_DOUBLE,
                                         [POLICY_OPTION_ENUM] = CODEC_ENUM,
                                         [POLICY_OPTION_THRESHOLD] = CODEC_DOUBLE};
    SS_ASSERT(o->type != POLICY_OPTION_DURATION); /* record its seconds under a key of its own */
    codec_key k = {o->trace_key, by_type[o->type], o->offset, o->names, required};
    return k;
}

static int listed(const char *key) {
    for (int i = 0; i < FORMAT_KEYS; i++)
        if (!strcmp(format_keys[i].key, key)) return 1;
    return 0;
}

static void build_keys(void) {
    for (int i = 0; i < FORMAT_KEYS; i++) {
        keys[n_keys] = format_keys[i];
        if (format_keys[i].type == CODEC_OPTION) {
            const policy_option *o = NULL;
            for (int k = 0; k < policy_option_count() && !o; k++)
                if (policy_option_at(k)->trace_key &&
                    !strcmp(policy_option_at(k)->trace_key, format_keys[i].key))
                    o = policy_option_at(k);
            SS_ASSERT(o); /* a key of the format lost its option */
            keys[n_keys] = option_key(o, 1);
        }
        n_keys++;
    }
    for (int k = 0; k < policy_option_count(); k++) {
        const policy_option *o = policy_option_at(k);
        if (!o->trace_key || listed(o->trace_key)) continue;
        SS_ASSERT(n_keys < POLICY_CODEC_MAX_KEYS);
        keys[n_keys++] = option_key(o, 0);
    }
}

int policy_codec_count(void) {
    pthread_once(&keys_once, build_keys);
    return n_keys;
}

const char *policy_codec_key(int i) {
    return i >= 0 && i < policy_codec_count() ? keys[i].key : NULL;
}

int policy_codec_required(int i) {
    return i >= 0 && i < policy_codec_count() ? keys[i].required : 0;
}

static void format_value(const codec_key *k, const policy_config *pc, FILE *fp) {
    const char *p = (const char *)pc + k->offset;
    char buf[128];
    switch (k->type) {
    case CODEC_INT:
        fprintf(fp, "%d", *(const int *)p);
        break;
    case CODEC_LONG:
        fprintf(fp, "%ld", *(const long *)p);
        break;
    case CODEC_U64:
        fprintf(fp, "%llu", (unsigned long long)*(const uint64_t *)p);
        break;
    case CODEC_DOUBLE:
        fprintf(fp, "%.17g", *(const double *)p);
        break;
    case CODEC_ENUM: {
        const char *name = policy_enum_format(k->names, *(const int *)p);
        fputs(name ? name : k->names[0].name, fp);
        break;
    }
    case CODEC_KIND:
        fputs(policy_kind_name(pc->kind), fp);
        break;
    case CODEC_COLLECTIVE:
        fputs(pc->use_ps ? "ps" : sim_allreduce_algo_name(pc->coll.algo), fp);
        break;
    case CODEC_COMPUTE:
        sim_compute_format(&pc->compute, buf, sizeof buf);
        fputs(buf, fp);
        break;
    case CODEC_SLOWDOWN:
        if (!pc->slowdown) fputs("none", fp);
        for (int w = 0; pc->slowdown && w < pc->workers; w++)
            fprintf(fp, "%s%.17g", w ? "," : "", pc->slowdown[w]);
        break;
    case CODEC_OPTION:
        SS_ASSERT(!"unresolved option key");
    }
}

void policy_codec_write(const policy_config *pc, const char *prefix, FILE *fp) {
    for (int i = 0; i < policy_codec_count(); i++) {
        fprintf(fp, "%s%s = ", prefix, keys[i].key);
        format_value(&keys[i], pc, fp);
        fputc('\n', fp);
    }
}

static int parse_u64(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    if (s[0] < '0' || s[0] > '9') return -1;
    unsigned long long u = strtoull(s, &end, 10);
    if (*end || errno) return -1;
    *out = u;
    return 0;
}

/* 0 when the value is valid for the key (the field set), -1 otherwise. */
static int parse_value(const codec_key *k, const char *v, policy_config *pc) {
    char *p = (char *)pc + k->offset;
    long l;
    switch (k->type) {
    case CODEC_INT:
        if (number_parse_long(v, -1000000000L, 1000000000L, &l)) return -1;
        *(int *)p = (int)l;
        return 0;
    case CODEC_LONG:
        return number_parse_long(v, -4000000000000000000L, 4000000000000000000L, (long *)p);
    case CODEC_U64:
        return parse_u64(v, (uint64_t *)p);
    case CODEC_DOUBLE:
        return number_parse_double(v, (double *)p);
    case CODEC_ENUM:
        return policy_enum_parse(k->names, v, (int *)p);
    case CODEC_KIND:
        return policy_kind_parse(v, &pc->kind) == SS_OK ? 0 : -1;
    case CODEC_COLLECTIVE:
        pc->use_ps = !strcmp(v, "ps");
        if (pc->use_ps) return 0;
        return sim_allreduce_algo_parse("collective", v, &pc->coll.algo) == SS_OK ? 0 : -1;
    case CODEC_COMPUTE:
        return sim_compute_parse("compute", v, &pc->compute) == SS_OK ? 0 : -1;
    case CODEC_SLOWDOWN: /* checked by the caller against the worker count */
        return 0;
    case CODEC_OPTION:
        break;
    }
    return -1;
}

int policy_codec_parse(const char *key, const char *value, policy_config *pc, char *why, size_t n) {
    for (int i = 0; i < policy_codec_count(); i++) {
        if (strcmp(keys[i].key, key)) continue;
        if (parse_value(&keys[i], value, pc) == 0) return i;
        snprintf(why, n, "invalid value '%.64s' for policy key '%s'", value, key);
        return POLICY_CODEC_INVALID;
    }
    return POLICY_CODEC_UNKNOWN;
}
