/* The platform check: a SimGrid platform file validated and its hosts listed with libxml2, before
 * SimGrid reads it (see platform_check.h). */
#include "sim/net/platform_check.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "common/infile.h"
#include "common/number.h"
#include "common/status.h"
#include "common/units.h"
#include "sim/compute/gpu_table.h"
#include "sim/net/fabric.h"

/* Largest number of hosts a platform may list (cluster radicals are expanded in memory). */
#define PLATFORM_MAX_HOSTS (1 << 22)

/* ---------------------------------------------------------------- platform check */

/* Where a GPU host sits in a node platform (cluster.h): its node, local_rank and nic properties,
 * PLACE_ABSENT where a property is missing, PLACE_BAD where it is not an integer >= 0; and the
 * line of its element, for messages. */
#define PLACE_ABSENT (-1L)
#define PLACE_BAD    (-2L)
typedef struct host_place {
    long node, local_rank, nic;
    long line;
} host_place;

typedef struct host_list {
    int n, cap;
    char **names;
    int *is_ps;
    host_place *place;
} host_list;

static void host_list_add(host_list *l, const char *name, int is_ps, const host_place *place) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->names = realloc(l->names, (size_t)l->cap * sizeof *l->names);
        l->is_ps = realloc(l->is_ps, (size_t)l->cap * sizeof *l->is_ps);
        l->place = realloc(l->place, (size_t)l->cap * sizeof *l->place);
        SS_ASSERT(l->names && l->is_ps && l->place);
    }
    l->names[l->n] = strdup(name);
    SS_ASSERT(l->names[l->n] != NULL);
    l->is_ps[l->n] = is_ps;
    l->place[l->n] = *place;
    l->n++;
}

static void host_list_free(host_list *l) {
    for (int i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    free(l->is_ps);
    free(l->place);
    memset(l, 0, sizeof *l);
}

/* Context of one check: the file and the current element for messages. */
typedef struct check_ctx {
    const char *path;
    host_list hosts;
} check_ctx;

static int elem_error(const check_ctx *c, const xmlNode *n, const char *fmt, const char *a,
                      const char *b) {
    char what[512];
    snprintf(what, sizeof what, fmt, a, b ? b : "");
    return ss_error_set(SS_EINPUT, "%s:%ld: <%s>: %s", c->path, (long)xmlGetLineNo(n),
                        (const char *)n->name, what);
}

static int is_elem(const xmlNode *n, const char *name) {
    return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

/* Attribute value (libxml2 allocation; free with xmlFree) or NULL. */
static char *attr(const xmlNode *n, const char *name) {
    return (char *)xmlGetProp((xmlNode *)n, (const xmlChar *)name);
}

typedef enum value_kind { VALUE_BANDWIDTH, VALUE_LATENCY, VALUE_SPEED } value_kind;

/* Which attributes carry which kind of value, on any element. */
static const struct {
    const char *attr;
    value_kind kind;
} value_attrs[] = {
    {"bandwidth", VALUE_BANDWIDTH},   {"bw", VALUE_BANDWIDTH},           {"bb_bw", VALUE_BANDWIDTH},
    {"loopback_bw", VALUE_BANDWIDTH}, {"limiter_link", VALUE_BANDWIDTH}, {"bw_in", VALUE_BANDWIDTH},
    {"bw_out", VALUE_BANDWIDTH},      {"latency", VALUE_LATENCY},        {"lat", VALUE_LATENCY},
    {"bb_lat", VALUE_LATENCY},        {"loopback_lat", VALUE_LATENCY},   {"speed", VALUE_SPEED}};

static int check_value(const check_ctx *c, const xmlNode *n, const char *name, const char *text,
                       value_kind kind) {
    /* A speed may list several power states: "1Gf,500Mf". */
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    char *save = NULL;
    int any = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*tok))
            tok++;
        double v = 0;
        int bad;
        char msg[200];
        any = 1;
        switch (kind) {
        case VALUE_BANDWIDTH:
            bad = units_parse_bandwidth(tok, &v) != 0;
            if (bad || !(v > 0)) {
                snprintf(msg, sizeof msg, "%s=\"%%s\": %s", name,
                         bad ? "not a bandwidth with a unit (e.g. \"25Gbps\", \"100MBps\")"
                             : "bandwidth must be > 0");
                return elem_error(c, n, msg, text, NULL);
            }
            break;
        case VALUE_LATENCY:
            bad = 0;
            if (units_parse_time(tok, &v) != 0) { /* a bare 0 is accepted, as SimGrid does */
                double z;
                bad = !(number_parse_double(tok, &z) == 0 && z == 0);
                v = 0;
            }
            if (bad || v < 0) {
                snprintf(msg, sizeof msg, "%s=\"%%s\": %s", name,
                         bad ? "not a time with a unit (e.g. \"5us\", \"1.5ms\")"
                             : "latency must be >= 0");
                return elem_error(c, n, msg, text, NULL);
            }
            break;
        case VALUE_SPEED:
            bad = units_parse_speed(tok, &v) != 0;
            if (bad || !(v > 0)) {
                snprintf(msg, sizeof msg, "%s=\"%%s\": %s", name,
                         bad ? "not a speed with a unit (e.g. \"15.7Tf\", \"1Gf\")"
                             : "speed must be > 0");
                return elem_error(c, n, msg, text, NULL);
            }
            break;
        }
    }
    if (!any) return elem_error(c, n, "%s is empty", name, NULL);
    return SS_OK;
}

static int check_enum(const check_ctx *c, const xmlNode *n, const char *name,
                      const char *const *valid, const char *valid_text) {
    char *v = attr(n, name);
    if (!v) return SS_OK;
    int ok = 0;
    for (const char *const *p = valid; *p; p++)
        ok |= strcmp(v, *p) == 0;
    int st = SS_OK;
    if (!ok) {
        char msg[400];
        snprintf(msg, sizeof msg, "unknown %s=\"%%s\" (valid: %s)", name, valid_text);
        st = elem_error(c, n, msg, v, NULL);
    }
    xmlFree(v);
    return st;
}

static const char *const topologies[] = {"FLAT", "TORUS", "FAT_TREE", "DRAGONFLY", NULL};
static const char *const routings[] = {"Full",    "Floyd",   "Dijkstra", "DijkstraCache", "None",
                                       "Vivaldi", "Cluster", "Wifi",     "Star",          NULL};
static const char *const sharings[] = {"SHARED", "SPLITDUPLEX", "FULLDUPLEX", "FATPIPE",
                                       "WIFI",   "NONLINEAR",   NULL};

/* 1 if the element has a child <prop id="role" value="ps"/>. */
static int has_ps_role(const xmlNode *n) {
    for (const xmlNode *k = n->children; k; k = k->next) {
        if (!is_elem(k, "prop")) continue;
        char *id = attr(k, "id"), *v = attr(k, "value");
        int ps = id && v && strcmp(id, "role") == 0 && strcasecmp(v, "ps") == 0;
        xmlFree(id);
        xmlFree(v);
        if (ps) return 1;
    }
    return 0;
}

/* Value of a child <prop id="ps_last" value="K"/>: the cluster's last K hosts are PS hosts (for
 * topologies such as FAT_TREE where PS hosts must sit inside the cluster). 0 if absent, -1 if
 * not a number. */
static long ps_last(const xmlNode *n) {
    long k = 0;
    for (const xmlNode *p = n->children; p; p = p->next) {
        if (!is_elem(p, "prop")) continue;
        char *id = attr(p, "id"), *v = attr(p, "value");
        if (id && v && strcmp(id, "ps_last") == 0) {
            char *end;
            k = strtol(v, &end, 10);
            if (end == v || *end != '\0') k = -1;
        }
        xmlFree(id);
        xmlFree(v);
    }
    return k;
}

/* The integer value of a child <prop id="key" value="V"/>: PLACE_ABSENT without one, PLACE_BAD
 * when V is not an integer >= 0. */
static long prop_index(const xmlNode *n, const char *key) {
    long v = PLACE_ABSENT;
    for (const xmlNode *p = n->children; p; p = p->next) {
        if (!is_elem(p, "prop")) continue;
        char *id = attr(p, "id"), *text = attr(p, "value");
        if (id && strcmp(id, key) == 0) {
            char *end = NULL;
            errno = 0;
            v = text ? strtol(text, &end, 10) : -1;
            if (!text || end == text || *end != '\0' || errno || v < 0 || v > INT_MAX)
                v = PLACE_BAD;
        }
        xmlFree(id);
        xmlFree(text);
    }
    return v;
}

/* The node placement an element gives its hosts (on a <cluster>: all of them). */
static host_place read_place(const xmlNode *n) {
    return (host_place){.node = prop_index(n, "node"),
                        .local_rank = prop_index(n, "local_rank"),
                        .nic = prop_index(n, "nic"),
                        .line = xmlGetLineNo(n)};
}

/* Expands a cluster radical ("0-15", "0-3,8,10-11") into host names, in order. */
static int expand_radical(check_ctx *c, const xmlNode *n, const char *prefix, const char *suffix,
                          const char *radical, int is_ps) {
    const host_place place = read_place(n);
    const char *p = radical;
    while (*p) {
        char *end;
        errno = 0;
        long a = strtol(p, &end, 10), b;
        if (end == p || a < 0 || errno) break;
        p = end;
        if (*p == '-') {
            p++;
            b = strtol(p, &end, 10);
            if (end == p || b < a || errno) break;
            p = end;
        } else {
            b = a;
        }
        if (b - a + 1 + c->hosts.n > PLATFORM_MAX_HOSTS)
            return elem_error(c, n, "radical=\"%s\": more than 4194304 hosts", radical, NULL);
        for (long i = a; i <= b; i++) {
            char name[512];
            snprintf(name, sizeof name, "%s%ld%s", prefix, i, suffix);
            host_list_add(&c->hosts, name, is_ps, &place);
        }
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p == '\0') return SS_OK;
        break;
    }
    return elem_error(c, n, "radical=\"%s\": expected ranges like \"0-15\" or \"0-3,8\"", radical,
                      NULL);
}

static int require(const check_ctx *c, const xmlNode *n, const char *const *names) {
    for (const char *const *a = names; *a; a++) {
        if (!xmlHasProp((xmlNode *)n, (const xmlChar *)*a))
            return elem_error(c, n, "missing attribute '%s'", *a, NULL);
    }
    return SS_OK;
}

/* A <prop id="fabric"> must name a fabric the network model knows (sim/net/fabric.h). */
static int check_fabric_prop(const check_ctx *c, const xmlNode *n) {
    char *id = attr(n, "id"), *v = attr(n, "value");
    sim_fabric f;
    int st = SS_OK;
    if (id && strcmp(id, "fabric") == 0 && sim_fabric_parse(v, &f) != 0) {
        char *owner = n->parent ? attr(n->parent, "id") : NULL;
        st = ss_error_set(SS_EUSAGE,
                          "%s:%ld: <prop id=\"fabric\" value=\"%s\"> of <%s id=\"%s\">: unknown "
                          "fabric (valid: %s)",
                          c->path, (long)xmlGetLineNo(n), v ? v : "",
                          n->parent ? (const char *)n->parent->name : "?", owner ? owner : "",
                          sim_fabric_valid_names());
        xmlFree(owner);
    }
    const gpu_class *g;
    if (!st && id && strcmp(id, "gpu") == 0 && gpu_table_find("gpu", v, &g) != SS_OK) {
        char names[256];
        st = ss_error_set(
            SS_EINPUT, "%s:%ld: <prop id=\"gpu\" value=\"%s\">: unknown GPU class (valid: %s)",
            c->path, (long)xmlGetLineNo(n), v ? v : "", gpu_table_names(", ", names, sizeof names));
    }
    xmlFree(id);
    xmlFree(v);
    return st;
}

static int check_element(check_ctx *c, const xmlNode *n) {
    int st;
    if (is_elem(n, "prop")) return check_fabric_prop(c, n);
    for (size_t i = 0; i < sizeof value_attrs / sizeof value_attrs[0]; i++) {
        char *v = attr(n, value_attrs[i].attr);
        if (!v) continue;
        /* A <prop> value is free text; limiter_link on a cluster is a bandwidth too. */
        st = is_elem(n, "prop") ? SS_OK
                                : check_value(c, n, value_attrs[i].attr, v, value_attrs[i].kind);
        xmlFree(v);
        if (st) return st;
    }
    if ((st = check_enum(
             c, n, "routing", routings,
             "Full, Floyd, Dijkstra, DijkstraCache, None, Vivaldi, Cluster, Wifi, Star")))
        return st;
    if ((st = check_enum(c, n, "sharing_policy", sharings,
                         "SHARED, SPLITDUPLEX, FULLDUPLEX, FATPIPE, WIFI, NONLINEAR")) ||
        (st = check_enum(c, n, "bb_sharing_policy", sharings,
                         "SHARED, SPLITDUPLEX, FULLDUPLEX, FATPIPE, WIFI, NONLINEAR")))
        return st;
    if (is_elem(n, "host") || is_elem(n, "peer")) {
        static const char *const req_host[] = {"id", "speed", NULL};
        if ((st = require(c, n, req_host))) return st;
        char *id = attr(n, "id");
        const host_place place = read_place(n);
        host_list_add(&c->hosts, id, has_ps_role(n), &place);
        xmlFree(id);
    } else if (is_elem(n, "cluster") || is_elem(n, "cabinet")) {
        static const char *const req_cluster[] = {"id",    "prefix", "suffix", "radical",
                                                  "speed", "bw",     "lat",    NULL};
        if ((st = require(c, n, req_cluster))) return st;
        if ((st = check_enum(c, n, "topology", topologies, "FLAT, TORUS, FAT_TREE, DRAGONFLY")))
            return st;
        char *topo = attr(n, "topology");
        if (topo && strcmp(topo, "FLAT") != 0 &&
            !xmlHasProp((xmlNode *)n, (const xmlChar *)"topo_parameters")) {
            st = elem_error(c, n, "topology=\"%s\" needs topo_parameters", topo, NULL);
        }
        xmlFree(topo);
        if (st) return st;
        char *prefix = attr(n, "prefix"), *suffix = attr(n, "suffix"), *rad = attr(n, "radical");
        int first = c->hosts.n;
        st = expand_radical(c, n, prefix, suffix, rad, has_ps_role(n));
        long last_ps = ps_last(n);
        if (!st && (last_ps < 0 || last_ps > c->hosts.n - first))
            st = elem_error(c, n, "<prop id=\"ps_last\"> must be 0 to the cluster's host count", "",
                            NULL);
        for (int i = c->hosts.n - (int)(last_ps > 0 ? last_ps : 0); !st && i < c->hosts.n; i++)
            c->hosts.is_ps[i] = 1;
        xmlFree(prefix);
        xmlFree(suffix);
        xmlFree(rad);
        if (st) return st;
    } else if (is_elem(n, "link")) {
        static const char *const req_link[] = {"id", "bandwidth", NULL};
        if ((st = require(c, n, req_link))) return st;
    }
    for (const xmlNode *k = n->children; k; k = k->next) {
        if (k->type != XML_ELEMENT_NODE) continue;
        if ((st = check_element(c, k))) return st;
    }
    return SS_OK;
}

/* ---------------------------------------------------------------- node structure */

static int place_error(const check_ctx *c, int i, const char *what) {
    return ss_error_set(SS_EUSAGE, "%s:%ld: <host id=\"%s\">: %s", c->path, c->hosts.place[i].line,
                        c->hosts.names[i], what);
}

/* Each GPU host of a node platform has node, local_rank and nic, each an integer >= 0; *placed
 * counts them. */
static int check_place_props(const check_ctx *c, int *placed) {
    static const char *const keys[] = {"node", "local_rank", "nic"};
    *placed = 0;
    for (int i = 0; i < c->hosts.n; i++) {
        const host_place *p = &c->hosts.place[i];
        const long v[3] = {p->node, p->local_rank, p->nic};
        int present = 0;
        char msg[400];
        for (int k = 0; k < 3; k++) {
            if (v[k] == PLACE_BAD) {
                snprintf(msg, sizeof msg, "<prop id=\"%s\">: not an integer >= 0", keys[k]);
                return place_error(c, i, msg);
            }
            present += v[k] >= 0;
        }
        if (present == 0) continue;
        if (present < 3) {
            int have = v[0] >= 0 ? 0 : v[1] >= 0 ? 1 : 2, miss = v[0] < 0 ? 0 : v[1] < 0 ? 1 : 2;
            snprintf(msg, sizeof msg,
                     "has the property %s but no %s (a GPU of a node platform needs node, "
                     "local_rank and nic)",
                     keys[have], keys[miss]);
            return place_error(c, i, msg);
        }
        (*placed)++;
    }
    return SS_OK;
}

static const host_place *sort_places; /* qsort has no context argument */
static int compare_places(const void *a, const void *b) {
    const host_place *x = &sort_places[*(const int *)a], *y = &sort_places[*(const int *)b];
    if (x->node != y->node) return x->node < y->node ? -1 : 1;
    if (x->nic != y->nic) return x->nic < y->nic ? -1 : 1;
    return (x->local_rank > y->local_rank) - (x->local_rank < y->local_rank);
}

/* Node k's GPUs idx[from..to) (sorted by nic, local_rank) against node 0's shape (*g0, *r0;
 * 0 while node 0 is being read): same GPU count, local ranks 0..G-1 once each, nics 0..R-1. */
static int check_one_node(const check_ctx *c, const int *idx, int from, int to, int *g0, int *r0) {
    const host_place *pl = c->hosts.place;
    long k = pl[idx[from]].node, g = to - from, r = 0;
    char msg[400];
    unsigned char *seen = ss_calloc((size_t)g, 1);
    int st = SS_OK;
    for (int j = from; j < to && !st; j++) {
        if (j == from || pl[idx[j]].nic != pl[idx[j - 1]].nic) r++;
        long lr = pl[idx[j]].local_rank;
        if (lr >= g || seen[lr]) {
            snprintf(msg, sizeof msg,
                     "local_rank=%ld: node %ld has %ld GPUs, whose local_rank "
                     "must be 0..%ld, each once",
                     lr, k, g, g - 1);
            st = place_error(c, idx[j], msg);
        } else {
            seen[lr] = 1;
        }
    }
    free(seen);
    if (st) return st;
    long last_nic = pl[idx[to - 1]].nic;
    if (last_nic >= r) {
        snprintf(msg, sizeof msg,
                 "nic=%ld: node %ld's GPUs use %ld NICs, numbered 0..%ld: rail "
                 "%ld does not exist",
                 last_nic, k, r, r - 1, last_nic);
        return place_error(c, idx[to - 1], msg);
    }
    if (*g0 == 0) {
        *g0 = (int)g;
        *r0 = (int)r;
    } else if (g != *g0 || r != *r0) {
        snprintf(msg, sizeof msg,
                 "node %ld has %ld GPUs on %ld NICs, node 0 has %d on %d (every "
                 "node needs the same GPU and NIC counts)",
                 k, g, r, *g0, *r0);
        return place_error(c, idx[from], msg);
    }
    return SS_OK;
}

/* The node/NIC structure of a node platform (cluster.h); info gets its shape. */
static int check_nodes(const check_ctx *c, sim_platform_info *info) {
    int placed, st = check_place_props(c, &placed);
    if (st || placed == 0) return st;
    int *idx = ss_malloc((size_t)placed * sizeof *idx), m = 0;
    for (int i = 0; i < c->hosts.n; i++)
        if (c->hosts.place[i].node >= 0) idx[m++] = i;
    sort_places = c->hosts.place;
    qsort(idx, (size_t)m, sizeof *idx, compare_places);
    int g0 = 0, r0 = 0, nodes = 0;
    for (int from = 0, to; from < m && !st; from = to) {
        long k = c->hosts.place[idx[from]].node;
        if (k != nodes) {
            char msg[200];
            snprintf(msg, sizeof msg,
                     "node=%ld, but no GPU host has node=%d (nodes are numbered "
                     "0..N-1)",
                     k, nodes);
            st = place_error(c, idx[from], msg);
            break;
        }
        for (to = from; to < m && c->hosts.place[idx[to]].node == k; to++)
            ;
        st = check_one_node(c, idx, from, to, &g0, &r0);
        nodes++;
    }
    free(idx);
    if (st) return st;
    info->n_nodes = nodes;
    info->gpus_per_node = g0;
    info->nics_per_node = r0;
    return SS_OK;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* libxml2 errors: the first one that matters is kept for the message. SimGrid's own examples
 * draw their topology sketches with "--" inside comments, which XML forbids but SimGrid's parser
 * accepts: that one is ignored. */
typedef struct xml_first_error {
    int seen;
    int line;
    char msg[300];
} xml_first_error;

static void xml_collect(void *ctx, const xmlError *e) {
    xml_first_error *f = ctx;
    if (f->seen || !e || e->level < XML_ERR_ERROR || e->code == XML_ERR_HYPHEN_IN_COMMENT) return;
    f->seen = 1;
    f->line = e->line;
    snprintf(f->msg, sizeof f->msg, "%s", e->message ? e->message : "not well-formed");
    size_t l = strlen(f->msg);
    while (l && (f->msg[l - 1] == '\n' || f->msg[l - 1] == ' '))
        f->msg[--l] = '\0';
}

/* The document of the platform: read from the file `path`, or parsed from data[0..size) when
 * data is not NULL (path then names it). *first gets libxml2's first error. */
static xmlDoc *platform_parse(const char *path, const char *data, size_t size,
                              xml_first_error *first) {
    const int flags = XML_PARSE_NONET | XML_PARSE_RECOVER | XML_PARSE_NOWARNING;
    xmlParserCtxt *pc = xmlNewParserCtxt();
    SS_ASSERT(pc != NULL);
    xmlSetStructuredErrorFunc(first, (xmlStructuredErrorFunc)xml_collect);
    xmlDoc *doc = data ? xmlCtxtReadMemory(pc, data, (int)size, path, NULL, flags)
                       : xmlCtxtReadFile(pc, path, NULL, flags);
    xmlSetStructuredErrorFunc(NULL, NULL);
    xmlFreeParserCtxt(pc);
    return doc;
}

/* Checks the parsed platform (freeing doc) and lists its hosts: all of sim_platform_check()
 * after the reading, shared with sim_platform_check_mem(). */
static int platform_check_doc(const char *path, xmlDoc *doc, const xml_first_error *first,
                              sim_platform_info *info) {
    if (!doc || first->seen) {
        if (doc) xmlFreeDoc(doc);
        return ss_error_set(SS_EINPUT, "platform %s:%d: malformed XML: %s", path, first->line,
                            first->seen ? first->msg : "cannot parse");
    }
    if (!doc->intSubset || !doc->intSubset->name ||
        strcmp((const char *)doc->intSubset->name, "platform") != 0) {
        xmlFreeDoc(doc);
        return ss_error_set(SS_EINPUT,
                            "platform %s: no <!DOCTYPE platform ...> line: SimGrid needs "
                            "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\"> "
                            "after the <?xml?> line",
                            path);
    }
    check_ctx c = {.path = path};
    const xmlNode *root = xmlDocGetRootElement(doc);
    int st = SS_OK;
    if (!root || !is_elem(root, "platform")) {
        st = ss_error_set(SS_EINPUT, "platform %s: the root element is <%s>, expected <platform>",
                          path, root ? (const char *)root->name : "");
    } else {
        char *version = attr(root, "version");
        if (!version || strtod(version, NULL) < 4.0)
            st = ss_error_set(SS_EINPUT,
                              "platform %s:%ld: <platform version=\"%s\">: SimGrid 3.32 reads "
                              "version 4.1 (write <platform version=\"4.1\">)",
                              path, (long)xmlGetLineNo(root), version ? version : "");
        xmlFree(version);
        if (!st) st = check_element(&c, root);
    }
    xmlFreeDoc(doc);
    if (!st && c.hosts.n == 0)
        st = ss_error_set(SS_EINPUT, "platform %s: no host in the file", path);
    if (!st) {
        char **sorted = ss_malloc((size_t)c.hosts.n * sizeof *sorted);
        memcpy(sorted, c.hosts.names, (size_t)c.hosts.n * sizeof *sorted);
        qsort(sorted, (size_t)c.hosts.n, sizeof *sorted, compare_names);
        for (int i = 1; i < c.hosts.n && !st; i++) {
            if (strcmp(sorted[i - 1], sorted[i]) == 0)
                st = ss_error_set(SS_EINPUT, "platform %s: host name '%s' is used twice", path,
                                  sorted[i]);
        }
        free(sorted);
    }
    if (!st) st = check_nodes(&c, info);
    if (st) {
        host_list_free(&c.hosts);
        memset(info, 0, sizeof *info);
        return st;
    }
    free(c.hosts.place);
    info->n_hosts = c.hosts.n;
    info->host_names = c.hosts.names;
    info->host_is_ps = c.hosts.is_ps;
    for (int i = 0; i < c.hosts.n; i++)
        info->n_ps_hosts += c.hosts.is_ps[i];
    return SS_OK;
}

int sim_platform_check(const char *path, sim_platform_info *info) {
    SS_ASSERT(info != NULL);
    memset(info, 0, sizeof *info);
    if (!path || !*path) return ss_error_set(SS_EUSAGE, "no platform file given");
    int rc = infile_check(path, "platform", INFILE_MAX_TEXT, SS_EINPUT);
    if (rc != SS_OK) return rc;
    FILE *f = fopen(path, "rb");
    if (!f) return ss_error_set(SS_EINPUT, "platform %s: cannot open: %s", path, strerror(errno));
    unsigned char head[4] = {0};
    const size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    /* libxml2 reads a byte-order mark; SimGrid's own parser stops at it ("Unexpected character
     * in prolog") and aborts the process */
    if (got >= 3 && head[0] == 0xEF && head[1] == 0xBB && head[2] == 0xBF)
        return ss_error_set(SS_EINPUT,
                            "platform %s:1: the file starts with a UTF-8 byte-order mark, which "
                            "SimGrid cannot read; save it without one (e.g. sed -i '1s/^\\xEF\\xBB"
                            "\\xBF//' FILE)",
                            path);
    if (got >= 2 && ((head[0] == 0xFE && head[1] == 0xFF) || (head[0] == 0xFF && head[1] == 0xFE)))
        return ss_error_set(SS_EINPUT,
                            "platform %s:1: the file is UTF-16 (byte-order mark); SimGrid reads "
                            "UTF-8 or ASCII: convert it (e.g. iconv -f UTF-16 -t UTF-8)",
                            path);
    xml_first_error first = {0};
    xmlDoc *doc = platform_parse(path, NULL, 0, &first);
    return platform_check_doc(path, doc, &first, info);
}

int sim_platform_check_mem(const char *name, const char *data, size_t size,
                           sim_platform_info *info) {
    SS_ASSERT(info != NULL && name != NULL && (data != NULL || size == 0));
    memset(info, 0, sizeof *info);
    if (size > INT_MAX) /* libxml2 takes an int */
        return ss_error_set(SS_EINPUT, "platform %s: %zu bytes, more than %d", name, size, INT_MAX);
    xml_first_error first = {0};
    xmlDoc *doc = platform_parse(name, data ? data : "", size, &first);
    return platform_check_doc(name, doc, &first, info);
}

void sim_platform_info_free(sim_platform_info *info) {
    if (!info) return;
    for (int i = 0; i < info->n_hosts; i++)
        free(info->host_names[i]);
    free(info->host_names);
    free(info->host_is_ps);
    memset(info, 0, sizeof *info);
}
