/* A model profile from a Chakra execution trace (chakra_import.h, traces/FORMAT.md "Chakra
 * execution traces"): a protobuf decoder of the few messages of Chakra's et_def.proto that the
 * import reads, the JSON form, the nodes' order and the mapping of a data-parallel step to
 * layers. */
#include "traces/chakra_import.h"
#include "traces/input_file.h"
#include "common/status.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* NodeType and CollectiveCommType of et_def.proto */
enum { NODE_COMP = 4, NODE_SEND = 5, NODE_RECV = 6, NODE_COLL = 7 };
enum { COMM_ALL_REDUCE = 0, COMM_BROADCAST = 5, COMM_BARRIER = 9 };

static const char *const comm_names[] = {
    "ALL_REDUCE", "REDUCE",         "ALL_GATHER",           "GATHER", "SCATTER", "BROADCAST",
    "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "BARRIER"};

#define DP_ONLY                                                                                    \
    "syncsim imports data-parallel traces whose gradients are all-reduced (ALL_REDUCE; "           \
    "BROADCAST and BARRIER are skipped), not tensor-, pipeline- or expert-parallel ones"

typedef struct ck_node {
    uint64_t id;
    const char *name; /* not NUL-terminated in a binary trace: name_len bytes */
    size_t name_len;
    long long type;
    double dur_us;
    int cpu; /* is_cpu_op (absent: 0, a device op) */
    int has_comm_type, has_comm_size;
    long long comm_type, comm_size;
    const char *pg; /* pg_name (NULL: none) */
    size_t pg_len;
    long dep0, n_deps; /* its data_deps: deps[dep0 .. dep0 + n_deps) */
    long where;        /* message index (binary) or workload_graph index (JSON) */
    size_t off;        /* byte offset of its message, its length first (binary) */
} ck_node;

typedef struct ck_graph {
    const char *path;
    const char *format; /* "binary", "gzip-compressed binary", "JSON", ... */
    int json;
    char version[64]; /* GlobalMetadata.version */
    ck_node *nodes;
    long n, cap;
    uint64_t *deps;
    long n_deps, cap_deps;
    long ctrl_deps; /* read, not used for the order */
} ck_graph;

/* ---- reading the file ---- */

int chakra_read_file(const char *path, const char *valid, unsigned char **out, size_t *len,
                     int *gz) {
    FILE *fp;
    int rc = traces_input_open(path, "trace", valid, PROFILE_IMPORT_MAX_BYTES, &fp);
    if (rc != SS_OK) return rc;
    unsigned char magic[2] = {0, 0};
    const size_t got_magic = fread(magic, 1, 2, fp);
    *gz = got_magic == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    /* zlib reads from the start of the file (the FILE read ahead of the magic) */
    const int fd = dup(fileno(fp));
    fclose(fp);
    gzFile z = fd >= 0 && lseek(fd, 0, SEEK_SET) == 0 ? gzdopen(fd, "rb") : NULL;
    if (!z) {
        if (fd >= 0) close(fd);
        return ss_error_set(SS_EINPUT, "cannot read trace %s", path);
    }
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = ss_malloc(cap);
    for (;;) {
        if (n + 1 >= cap) {
            buf = realloc(buf, cap *= 2);
            SS_ASSERT(buf);
        }
        size_t want = cap - n - 1;
        if (want > (1u << 30)) want = 1u << 30;
        const int got = gzread(z, buf + n, (unsigned)want);
        if (got < 0) {
            int errnum;
            const char *why = gzerror(z, &errnum);
            rc = ss_error_set(SS_EINPUT,
                              "cannot read trace %s: %s (a truncated or damaged gzip "
                              "file?)",
                              path, why && why[0] ? why : "read error");
            break;
        }
        if (got == 0) break;
        n += (size_t)got;
        if ((long long)n > PROFILE_IMPORT_MAX_BYTES) {
            rc = ss_error_set(SS_EINPUT, "trace %s holds more than %lld bytes uncompressed", path,
                              PROFILE_IMPORT_MAX_BYTES);
            break;
        }
    }
    /* a stream cut short reads as its end, and gzclose says so */
    if (gzclose(z) == Z_BUF_ERROR && rc == SS_OK)
        rc = ss_error_set(SS_EINPUT,
                          "cannot read trace %s: the gzip stream ends early (a "
                          "truncated file?)",
                          path);
    if (rc != SS_OK) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return SS_OK;
}

int chakra_is_binary(const unsigned char *data, size_t len) {
    size_t i = 0;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r'))
        i++;
    return i < len && data[i] != '{' && data[i] != '[';
}

int chakra_is_json(const cJSON *root) {
    return cJSON_IsObject(root) &&
           cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "workload_graph"));
}

/* ---- the protobuf decoder ---- */

typedef struct pb {
    const ck_graph *g;
    const unsigned char *b;
    size_t p, end; /* absolute offsets into b; a read never goes past end */
    long msg;      /* the message being read (0: GlobalMetadata) */
    size_t msg_at; /* where it starts (its length) */
    int top;       /* reading a message's length, between messages */
} pb;

static int pb_bad(const pb *r, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int pb_bad(const pb *r, size_t at, const char *fmt, ...) {
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ss_error_set(SS_EINPUT, "%s: Chakra execution trace, message %ld (%s) at byte %zu%s: %s",
                        r->g->path, r->msg, r->msg == 0 ? "GlobalMetadata" : "a Node", at,
                        r->g->format[0] == 'g' ? " of the uncompressed stream" : "", what);
}

static int pb_varint(pb *r, uint64_t *v) {
    const size_t at = r->p;
    uint64_t x = 0;
    for (int i = 0; i < 10; i++) {
        if (r->p >= r->end)
            return pb_bad(r, at, "a varint runs past the end of %s",
                          r->top ? "the file (a truncated file?)" : "its message");
        const unsigned c = r->b[r->p++];
        x |= (uint64_t)(c & 0x7f) << (7 * i);
        if (!(c & 0x80)) {
            *v = x;
            return SS_OK;
        }
    }
    return pb_bad(r, at, "a varint longer than 10 bytes");
}

/* One field: its number, wire type and value (varint and fixed: v; length-delimited: the
 * sub-range [pos, pos + v)). */
typedef struct pb_field {
    unsigned num;
    int wt;
    uint64_t v;
    size_t at, pos;
} pb_field;

static int pb_field_next(pb *r, pb_field *f) {
    f->at = r->p;
    uint64_t key;
    int rc = pb_varint(r, &key);
    if (rc != SS_OK) return rc;
    f->wt = (int)(key & 7);
    f->num = key >> 3 > 0xffffffu ? 0 : (unsigned)(key >> 3);
    if (f->num == 0)
        return pb_bad(r, f->at, "field number 0 or too large (key %llu)", (unsigned long long)key);
    const size_t left = r->end - r->p;
    switch (f->wt) {
    case 0:
        return pb_varint(r, &f->v);
    case 1:
    case 5: {
        const size_t w = f->wt == 1 ? 8 : 4;
        if (left < w)
            return pb_bad(r, f->at, "field %u: a %zu-byte value with %zu bytes left", f->num, w,
                          left);
        f->v = 0;
        for (size_t i = 0; i < w; i++)
            f->v |= (uint64_t)r->b[r->p + i] << (8 * i);
        r->p += w;
        return SS_OK;
    }
    case 2:
        if ((rc = pb_varint(r, &f->v)) != SS_OK) return rc;
        if (f->v > r->end - r->p)
            return pb_bad(r, f->at,
                          "field %u of %llu bytes runs past the end of its message "
                          "(%zu bytes left)",
                          f->num, (unsigned long long)f->v, r->end - r->p);
        f->pos = r->p;
        r->p += (size_t)f->v;
        return SS_OK;
    case 3:
    case 4:
        return pb_bad(r, f->at,
                      "field %u has wire type %d (a group), which Chakra's schema "
                      "does not use",
                      f->num, f->wt);
    default:
        return pb_bad(r, f->at, "field %u has wire type %d, which protobuf does not define", f->num,
                      f->wt);
    }
}

static int pb_want(const pb *r, const pb_field *f, int wt, const char *what) {
    if (f->wt == wt) return SS_OK;
    return pb_bad(r, f->at, "field %u (%s) has wire type %d, not %d", f->num, what, f->wt, wt);
}

typedef enum { ATTR_NONE, ATTR_INT, ATTR_STRING, ATTR_OTHER } attr_kind;

/* An AttributeProto: its name and, for the integer types, bool and string_val, its value. */
static int pb_attr(pb *outer, const pb_field *af, ck_node *nd) {
    pb r = *outer;
    r.p = af->pos;
    r.end = af->pos + (size_t)af->v;
    const unsigned char *name = NULL, *str = NULL;
    size_t name_len = 0, str_len = 0;
    attr_kind kind = ATTR_NONE;
    long long iv = 0;
    pb_field f;
    int rc;
    while (r.p < r.end) {
        if ((rc = pb_field_next(&r, &f)) != SS_OK) return rc;
        const unsigned k = f.num;
        if (k == 1) {
            if ((rc = pb_want(&r, &f, 2, "AttributeProto.name")) != SS_OK) return rc;
            name = r.b + f.pos;
            name_len = (size_t)f.v;
        } else if (k == 7 || k == 9 || k == 11 || k == 13 || k == 15 || k == 17 || k == 27) {
            if ((rc = pb_want(&r, &f, 0, "an integer attribute")) != SS_OK) return rc;
            kind = ATTR_INT;
            iv = k == 15 || k == 17 ? (long long)((f.v >> 1) ^ (~(f.v & 1) + 1)) /* zigzag */
                 : k == 7           ? (long long)(int32_t)(uint32_t)f.v
                 : k == 11          ? (long long)(uint32_t)f.v
                                    : (long long)f.v;
        } else if (k == 19 || k == 23) {
            if ((rc = pb_want(&r, &f, 5, "a 32-bit fixed attribute")) != SS_OK) return rc;
            kind = ATTR_INT;
            iv = k == 23 ? (long long)(int32_t)(uint32_t)f.v : (long long)(uint32_t)f.v;
        } else if (k == 21 || k == 25) {
            if ((rc = pb_want(&r, &f, 1, "a 64-bit fixed attribute")) != SS_OK) return rc;
            kind = ATTR_INT;
            iv = (long long)f.v;
        } else if (k == 29) {
            if ((rc = pb_want(&r, &f, 2, "string_val")) != SS_OK) return rc;
            kind = ATTR_STRING;
            str = r.b + f.pos;
            str_len = (size_t)f.v;
        } else if (k >= 3 && k <= 32) {
            kind = ATTR_OTHER;
        }
    }
    if (!nd || !name) return SS_OK;
#define IS(s) (name_len == strlen(s) && !memcmp(name, s, name_len))
    const char *want = NULL;
    if (IS("is_cpu_op") || IS("comm_type") || IS("comm_size")) {
        if (kind != ATTR_INT && kind != ATTR_NONE) want = "an integer or bool";
    } else if (IS("pg_name")) {
        if (kind != ATTR_STRING && kind != ATTR_NONE) want = "a string";
    } else
        return SS_OK;
    if (want)
        return pb_bad(outer, af->at, "attribute '%.*s' is not %s", (int)name_len,
                      (const char *)name, want);
    if (kind == ATTR_NONE) /* an attribute without a value: as if absent */
        return SS_OK;
    if (IS("is_cpu_op"))
        nd->cpu = iv != 0;
    else if (IS("comm_type")) {
        nd->has_comm_type = 1;
        nd->comm_type = iv;
    } else if (IS("comm_size")) {
        nd->has_comm_size = 1;
        nd->comm_size = iv;
    } else {
        nd->pg = (const char *)str;
        nd->pg_len = str_len;
    }
#undef IS
    return SS_OK;
}

static void add_dep(ck_graph *g, uint64_t d) {
    if (g->n_deps == g->cap_deps) {
        g->cap_deps = g->cap_deps ? 2 * g->cap_deps : 1024;
        g->deps = realloc(g->deps, sizeof(uint64_t) * (size_t)g->cap_deps);
        SS_ASSERT(g->deps);
    }
    g->deps[g->n_deps++] = d;
}

static ck_node *new_node(ck_graph *g) {
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 256;
        g->nodes = realloc(g->nodes, sizeof(ck_node) * (size_t)g->cap);
        SS_ASSERT(g->nodes);
    }
    ck_node *nd = &g->nodes[g->n++];
    *nd = (ck_node){.name = "", .dep0 = g->n_deps};
    return nd;
}

/* A repeated uint64 (ctrl_deps, data_deps), packed or not; data deps are kept. */
static int pb_deps(pb *r, const pb_field *f, ck_graph *g, int keep) {
    if (f->wt == 0) {
        if (keep) add_dep(g, f->v);
        return SS_OK;
    }
    int rc = pb_want(r, f, 2, f->num == 4 ? "ctrl_deps" : "data_deps");
    if (rc != SS_OK) return rc;
    pb s = *r;
    s.p = f->pos;
    s.end = f->pos + (size_t)f->v;
    while (s.p < s.end) {
        uint64_t d;
        if ((rc = pb_varint(&s, &d)) != SS_OK) return rc;
        if (keep) add_dep(g, d);
        g->ctrl_deps += !keep;
    }
    return SS_OK;
}

static int pb_node(pb *r, ck_graph *g) {
    ck_node *nd = new_node(g);
    nd->where = r->msg;
    nd->off = r->msg_at;
    pb_field f;
    int rc;
    while (r->p < r->end) {
        if ((rc = pb_field_next(r, &f)) != SS_OK) return rc;
        switch (f.num) {
        case 1: /* id */
        case 3: /* type */
        case 7: /* duration_micros */
            if ((rc = pb_want(r, &f, 0,
                              f.num == 1   ? "Node.id"
                              : f.num == 3 ? "Node.type"
                                           : "Node.duration_micros")) != SS_OK)
                return rc;
            if (f.num == 1)
                nd->id = f.v;
            else if (f.num == 3)
                nd->type = f.v > 1000 ? 1000 : (long long)f.v;
            else
                nd->dur_us = (double)f.v;
            break;
        case 2:
            if ((rc = pb_want(r, &f, 2, "Node.name")) != SS_OK) return rc;
            nd->name = (const char *)r->b + f.pos;
            nd->name_len = (size_t)f.v;
            break;
        case 4:
        case 5:
            if ((rc = pb_deps(r, &f, g, f.num == 5)) != SS_OK) return rc;
            g->ctrl_deps += f.num == 4 && f.wt == 0;
            break;
        case 10:
            if ((rc = pb_want(r, &f, 2, "Node.attr")) != SS_OK) return rc;
            if ((rc = pb_attr(r, &f, nd)) != SS_OK) return rc;
            break;
        default: /* start time, inputs, outputs and fields of later schemas: skipped */
            break;
        }
    }
    nd->n_deps = g->n_deps - nd->dep0;
    return SS_OK;
}

static int pb_metadata(pb *r, ck_graph *g) {
    pb_field f;
    int rc;
    while (r->p < r->end) {
        if ((rc = pb_field_next(r, &f)) != SS_OK) return rc;
        if (f.num == 1) {
            if ((rc = pb_want(r, &f, 2, "GlobalMetadata.version")) != SS_OK) return rc;
            size_t k = 0;
            for (size_t i = 0; i < f.v && k + 1 < sizeof g->version; i++) {
                const unsigned char c = r->b[f.pos + i];
                g->version[k++] = c > ' ' && c < 127 ? (char)c : '_';
            }
            g->version[k] = '\0';
        } else if (f.num == 2) {
            if ((rc = pb_want(r, &f, 2, "GlobalMetadata.attr")) != SS_OK) return rc;
            if ((rc = pb_attr(r, &f, NULL)) != SS_OK) return rc;
        }
    }
    return SS_OK;
}

static int decode_binary(ck_graph *g, const unsigned char *b, size_t len) {
    if (len == 0) return ss_error_set(SS_EINPUT, "%s: an empty file", g->path);
    pb r = {.g = g, .b = b, .p = 0, .end = len, .msg = 0};
    for (long m = 0; r.p < len; m++) {
        const size_t at = r.p;
        uint64_t mlen;
        r.msg = m;
        r.msg_at = at;
        r.top = 1;
        r.end = len;
        int rc = pb_varint(&r, &mlen);
        r.top = 0;
        if (rc != SS_OK) return rc;
        if (mlen > len - r.p)
            return pb_bad(&r, at,
                          "the message announces %llu bytes, %zu are left (a truncated "
                          "file?)",
                          (unsigned long long)mlen, len - r.p);
        r.end = r.p + (size_t)mlen;
        rc = m == 0 ? pb_metadata(&r, g) : pb_node(&r, g);
        if (rc != SS_OK) return rc;
        r.p = r.end;
    }
    return SS_OK;
}

/* ---- the JSON form ---- */

static int json_bad(const ck_graph *g, long i, const char *what) {
    return ss_error_set(SS_EINPUT, "%s: workload_graph[%ld]: %s", g->path, i, what);
}

static int json_uint(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 18446744073709549568.0 ||
        v->valuedouble != (double)(uint64_t)v->valuedouble)
        return 0;
    *out = (uint64_t)v->valuedouble;
    return 1;
}

static int decode_json(ck_graph *g, const cJSON *root) {
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(root, "workload_graph");
    const cJSON *e;
    long i = -1;
    cJSON_ArrayForEach(e, nodes) {
        i++;
        if (!cJSON_IsObject(e)) return json_bad(g, i, "not an object");
        ck_node *nd = new_node(g);
        nd->where = i;
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "Id");
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(e, "NodeType");
        uint64_t v;
        if (!json_uint(id, &nd->id)) return json_bad(g, i, "needs an integer \"Id\" >= 0");
        if (!json_uint(type, &v)) return json_bad(g, i, "needs an integer \"NodeType\" >= 0");
        nd->type = v > 1000 ? 1000 : (long long)v;
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "Name");
        if (cJSON_IsString(name)) {
            nd->name = name->valuestring;
            nd->name_len = strlen(name->valuestring);
        }
        const cJSON *rt = cJSON_GetObjectItemCaseSensitive(e, "runtime");
        if (rt && (!cJSON_IsNumber(rt) || !(rt->valuedouble >= 0) || rt->valuedouble > 1e18))
            return json_bad(g, i, "\"runtime\" (microseconds) is not a number >= 0");
        nd->dur_us = rt ? rt->valuedouble : 0;
        const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(e, "is_cpu_op");
        if (cpu && !cJSON_IsBool(cpu) && !cJSON_IsNumber(cpu))
            return json_bad(g, i, "\"is_cpu_op\" is not a bool");
        nd->cpu = cJSON_IsTrue(cpu) || (cJSON_IsNumber(cpu) && cpu->valuedouble != 0);
        const char *keys[] = {"comm_type", "comm_size"};
        for (int k = 0; k < 2; k++) {
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, keys[k]);
            if (!c) continue;
            if (!cJSON_IsNumber(c) || !(c->valuedouble > -9e18 && c->valuedouble < 9e18) ||
                c->valuedouble != (double)(long long)c->valuedouble) {
                char msg[64];
                snprintf(msg, sizeof msg, "\"%s\" is not an integer", keys[k]);
                return json_bad(g, i, msg);
            }
            *(k ? &nd->comm_size : &nd->comm_type) = (long long)c->valuedouble;
            *(k ? &nd->has_comm_size : &nd->has_comm_type) = 1;
        }
        const cJSON *pg = cJSON_GetObjectItemCaseSensitive(e, "pg_name");
        if (cJSON_IsString(pg)) {
            nd->pg = pg->valuestring;
            nd->pg_len = strlen(pg->valuestring);
        }
        const char *dep_keys[] = {"data_deps", "ctrlDeps", "ctrl_deps"};
        for (int k = 0; k < 3; k++) {
            const cJSON *deps = cJSON_GetObjectItemCaseSensitive(e, dep_keys[k]), *d;
            if (!deps) continue;
            if (!cJSON_IsArray(deps)) return json_bad(g, i, "a deps list is not an array");
            cJSON_ArrayForEach(d, deps) {
                if (!json_uint(d, &v))
                    return json_bad(g, i, "a dependency is not an integer node id >= 0");
                if (k == 0)
                    add_dep(g, v);
                else
                    g->ctrl_deps++;
            }
        }
        nd->n_deps = g->n_deps - nd->dep0;
    }
    return SS_OK;
}

/* ---- the order and the mapping ---- */

/* "node ID 'NAME' (message M at byte B)" or "(workload_graph[I])" */
static const char *node_text(const ck_graph *g, const ck_node *nd, char *buf, size_t n) {
    if (g->json)
        snprintf(buf, n, "node %llu '%.*s' (workload_graph[%ld])", (unsigned long long)nd->id,
                 (int)(nd->name_len > 100 ? 100 : nd->name_len), nd->name, nd->where);
    else
        snprintf(buf, n, "node %llu '%.*s' (message %ld at byte %zu)", (unsigned long long)nd->id,
                 (int)(nd->name_len > 100 ? 100 : nd->name_len), nd->name, nd->where, nd->off);
    return buf;
}

typedef struct id_ref {
    uint64_t id;
    long node;
} id_ref;

static int by_id(const void *a, const void *b) {
    const id_ref *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The rank (position by id) of the node with this id; -1: none. */
static long rank_of(const id_ref *by, long n, uint64_t id) {
    const id_ref key = {id, 0};
    const id_ref *r = bsearch(&key, by, (size_t)n, sizeof(id_ref), by_id);
    return r ? (long)(r - by) : -1;
}

static void heap_push(long *h, long *n, long v) {
    long i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > v) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static long heap_pop(long *h, long *n) {
    const long top = h[0], v = h[--*n];
    long i = 0;
    for (;;) {
        long c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1] < h[c]) c++;
        if (h[c] >= v) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
    return top;
}

/* order[0 .. n): node indices in a topological order of data_deps, the smallest id first among
 * the ready ones (Kahn). SS_EINPUT for a duplicate id or a cycle. */
static int topo_order(const ck_graph *g, long *order) {
    const long n = g->n;
    id_ref *by = ss_malloc(sizeof(id_ref) * (size_t)(n + 1));
    for (long i = 0; i < n; i++)
        by[i] = (id_ref){g->nodes[i].id, i};
    qsort(by, (size_t)n, sizeof(id_ref), by_id);
    char t1[256], t2[256];
    int rc = SS_OK;
    for (long i = 1; i < n && rc == SS_OK; i++)
        if (by[i].id == by[i - 1].id) {
            const ck_node *a = &g->nodes[by[i - 1].node], *b = &g->nodes[by[i].node];
            if (a->where > b->where) {
                const ck_node *t = a;
                a = b;
                b = t;
            }
            rc = ss_error_set(SS_EINPUT, "%s: %s and %s have the same id", g->path,
                              node_text(g, a, t1, sizeof t1), node_text(g, b, t2, sizeof t2));
        }
    /* in-degrees over present deps, and each node's dependents (by rank, CSR) */
    long *indeg = ss_calloc((size_t)n + 1, sizeof(long));
    long *start = ss_calloc((size_t)n + 2, sizeof(long));
    long *dep_rank = ss_malloc(sizeof(long) * (size_t)(g->n_deps + 1));
    for (long r = 0; r < n && rc == SS_OK; r++) {
        const ck_node *nd = &g->nodes[by[r].node];
        for (long k = 0; k < nd->n_deps; k++) {
            const long d = rank_of(by, n, g->deps[nd->dep0 + k]);
            dep_rank[nd->dep0 + k] = d;
            if (d < 0) continue;
            indeg[r]++;
            start[d + 1]++;
        }
    }
    long *kids = NULL, *fill = NULL, *heap = NULL;
    if (rc == SS_OK) {
        for (long r = 0; r < n; r++)
            start[r + 1] += start[r];
        kids = ss_malloc(sizeof(long) * (size_t)(start[n] + 1));
        fill = ss_malloc(sizeof(long) * (size_t)(n + 1));
        memcpy(fill, start, sizeof(long) * (size_t)n);
        for (long r = 0; r < n; r++) {
            const ck_node *nd = &g->nodes[by[r].node];
            for (long k = 0; k < nd->n_deps; k++)
                if (dep_rank[nd->dep0 + k] >= 0) kids[fill[dep_rank[nd->dep0 + k]]++] = r;
        }
        heap = ss_malloc(sizeof(long) * (size_t)(n + 1));
        long nh = 0, done = 0;
        for (long r = 0; r < n; r++)
            if (indeg[r] == 0) heap_push(heap, &nh, r);
        while (nh > 0) {
            const long r = heap_pop(heap, &nh);
            order[done++] = by[r].node;
            indeg[r] = -1;
            for (long k = start[r]; k < start[r + 1]; k++)
                if (--indeg[kids[k]] == 0) heap_push(heap, &nh, kids[k]);
        }
        if (done < n) {
            /* a node left waits on another one left: n steps back along such deps end on a
             * cycle */
            long r = 0;
            while (indeg[r] <= 0)
                r++;
            for (long step = 0; step < n; step++) {
                const ck_node *nd = &g->nodes[by[r].node];
                for (long k = 0; k < nd->n_deps; k++) {
                    const long d = dep_rank[nd->dep0 + k];
                    if (d >= 0 && indeg[d] > 0) {
                        r = d;
                        break;
                    }
                }
            }
            rc = ss_error_set(SS_EINPUT,
                              "%s: the nodes' data_deps form a cycle through %s (%ld of %ld "
                              "nodes are on or after a cycle)",
                              g->path, node_text(g, &g->nodes[by[r].node], t1, sizeof t1), n - done,
                              n);
        }
    }
    free(by);
    free(indeg);
    free(start);
    free(dep_rank);
    free(kids);
    free(fill);
    free(heap);
    return rc;
}

/* Whether the name marks the backward pass: "backward" in any case, or autograd's functions. */
static int is_backward(const ck_node *nd) {
    static const char word[] = "backward", fn[] = "autograd::engine::evaluate_function";
    for (size_t i = 0; i < nd->name_len; i++) {
        size_t k = 0;
        while (k < sizeof word - 1 && i + k < nd->name_len && (nd->name[i + k] | 0x20) == word[k])
            k++;
        if (k == sizeof word - 1) return 1;
        if (nd->name_len - i >= sizeof fn - 1 && !memcmp(nd->name + i, fn, sizeof fn - 1)) return 1;
    }
    return 0;
}

typedef struct bucket {
    const ck_node *nd;
    double bwd_us;
} bucket;

#define APPEND(buf, n, at, ...)                                                                    \
    do {                                                                                           \
        if ((at) < (n)) {                                                                          \
            const int w_ = snprintf((buf) + (at), (n) - (at), __VA_ARGS__);                        \
            (at) += w_ > 0 ? (size_t)w_ : 0;                                                       \
        }                                                                                          \
    } while (0)

static int build_profile(ck_graph *g, const profile_import_opts *o, model_profile *p, char *notes,
                         size_t notes_n) {
    long *order = ss_malloc(sizeof(long) * (size_t)(g->n + 1));
    int rc = topo_order(g, order);
    char t1[256], t2[256];
    int gpu = 0;
    long comp = 0;
    for (long i = 0; i < g->n; i++) {
        comp += g->nodes[i].type == NODE_COMP;
        gpu |= g->nodes[i].type == NODE_COMP && !g->nodes[i].cpu;
    }
    long marker = -1;
    for (long k = 0; k < g->n && rc == SS_OK && marker < 0; k++)
        if (is_backward(&g->nodes[order[k]])) marker = order[k];
    bucket *bk = ss_malloc(sizeof(bucket) * (size_t)(g->n + 1));
    long nb = 0, counted = 0, fwd_nodes = 0, host_coll = 0, skipped[10] = {0};
    double fwd_us = 0, acc_us = 0;
    int in_bwd = marker < 0; /* no backward node: the forward is 0 */
    for (long k = 0; k < g->n && rc == SS_OK; k++) {
        const ck_node *nd = &g->nodes[order[k]];
        if (order[k] == marker) in_bwd = 1;
        if (nd->type == NODE_COMP && (!gpu || !nd->cpu)) {
            counted++;
            if (in_bwd)
                acc_us += nd->dur_us;
            else {
                fwd_us += nd->dur_us;
                fwd_nodes++;
            }
        }
        if (nd->type == NODE_SEND || nd->type == NODE_RECV) {
            rc = ss_error_set(SS_EINPUT, "%s: %s is a point-to-point %s node: " DP_ONLY, g->path,
                              node_text(g, nd, t1, sizeof t1),
                              nd->type == NODE_SEND ? "COMM_SEND" : "COMM_RECV");
            break;
        }
        if (nd->type != NODE_COLL) continue;
        if (nd->cpu) {
            host_coll++;
            continue;
        }
        if (!nd->has_comm_type || nd->comm_type < 0 || nd->comm_type > 9) {
            rc = ss_error_set(SS_EINPUT, "%s: %s: a collective without a known comm_type (0 to 9)",
                              g->path, node_text(g, nd, t1, sizeof t1));
            break;
        }
        if (nd->comm_type == COMM_BROADCAST || nd->comm_type == COMM_BARRIER) {
            skipped[nd->comm_type]++;
            continue;
        }
        if (nd->comm_type != COMM_ALL_REDUCE) {
            rc = ss_error_set(SS_EINPUT, "%s: %s is a collective of type %s: " DP_ONLY, g->path,
                              node_text(g, nd, t1, sizeof t1), comm_names[nd->comm_type]);
            break;
        }
        if (!nd->has_comm_size || nd->comm_size <= 0) {
            rc = ss_error_set(SS_EINPUT,
                              "%s: %s: an ALL_REDUCE without a comm_size > 0 (its bytes, the "
                              "bucket's gradients)",
                              g->path, node_text(g, nd, t1, sizeof t1));
            break;
        }
        if (nb > 0) {
            const ck_node *f = bk[0].nd;
            const size_t la = f->pg ? f->pg_len : 0, lb = nd->pg ? nd->pg_len : 0;
            if (la != lb || (la && memcmp(f->pg, nd->pg, la))) {
                rc = ss_error_set(SS_EINPUT,
                                  "%s: all-reduces in two process groups, '%.*s' (%s) and "
                                  "'%.*s' (%s): " DP_ONLY,
                                  g->path, (int)(la > 60 ? 60 : la), f->pg ? f->pg : "",
                                  node_text(g, f, t1, sizeof t1), (int)(lb > 60 ? 60 : lb),
                                  nd->pg ? nd->pg : "", node_text(g, nd, t2, sizeof t2));
                break;
            }
        }
        bk[nb++] = (bucket){nd, acc_us};
        acc_us = 0;
    }
    if (rc == SS_OK && counted == 0)
        rc = ss_error_set(SS_EINPUT, "%s: no compute node (COMP_NODE) to time: nothing to replay",
                          g->path);
    if (rc == SS_OK && nb == 0)
        rc = ss_error_set(SS_EINPUT,
                          "%s: no ALL_REDUCE on the device (skipped: %ld host-side collectives, "
                          "%ld BROADCAST, %ld BARRIER): nothing to exchange; " DP_ONLY,
                          g->path, host_coll, skipped[COMM_BROADCAST], skipped[COMM_BARRIER]);
    if (rc != SS_OK) {
        free(order);
        free(bk);
        return rc;
    }
    /* layer j holds bucket nb - 1 - j: DDP's last bucket holds the first layers */
    p->layer_costs = ss_calloc((size_t)nb, sizeof(sim_layer_cost));
    p->layer_names = ss_calloc((size_t)nb, sizeof p->layer_names[0]);
    p->layers = (int)nb;
    double bwd_us = 0;
    for (long j = 0; j < nb; j++) {
        const bucket *b = &bk[nb - 1 - j];
        const double params = (double)((b->nd->comm_size + 3) / 4);
        snprintf(p->layer_names[j], sizeof p->layer_names[0], "allreduce.%llu",
                 (unsigned long long)b->nd->id);
        p->layer_costs[j] = (sim_layer_cost){.param_bytes = 4 * params,
                                             .kernels = j == 0 ? (int)fwd_nodes : 0,
                                             .kind = SIM_LAYER_OTHER,
                                             .fwd_s = j == 0 ? fwd_us * 1e-6 : 0,
                                             .bwd_s = b->bwd_us * 1e-6};
        p->params += params;
        bwd_us += b->bwd_us;
    }
    const double gap_us = acc_us;
    p->measured = 1;
    p->measured_batch = p->batch = o->batch;
    p->measured_steps = 1;
    snprintf(p->measured_device, sizeof p->measured_device, "%s", gpu ? "cuda" : "cpu");
    p->measured_gap_s = gap_us * 1e-6;
    p->measured_step_s = 0;
    for (int j = 0; j < p->layers; j++)
        p->measured_step_s += p->layer_costs[j].fwd_s + p->layer_costs[j].bwd_s;
    p->measured_step_s += p->measured_gap_s;
    p->backward_factor = 2;
    p->version = PROFILE_VERSION;
    const char *base = strrchr(g->path, '/');
    base = base ? base + 1 : g->path;
    if (o->name)
        snprintf(p->name, sizeof p->name, "%s", o->name);
    else {
        size_t k = 0;
        for (; base[k] && base[k] != '.' && k + 1 < sizeof p->name; k++)
            p->name[k] = (unsigned char)base[k] <= ' ' ? '_' : base[k];
        p->name[k] = '\0';
        if (!k) snprintf(p->name, sizeof p->name, "imported");
    }
    char desc[512];
    snprintf(desc, sizeof desc,
             "%s: %s compute, batch %d, %ld all-reduce buckets, from the Chakra execution trace %s",
             p->name, p->measured_device, p->batch, nb, base);
    snprintf(p->description, sizeof p->description, "%.*s", (int)sizeof p->description - 1, desc);
    size_t at = 0;
    APPEND(notes, notes_n, at,
           "syncsim model profile: %s, imported by 'syncsim profile import' from %s\n"
           "Chakra execution trace, %s%s%s: %ld nodes, %ld compute nodes, %ld counted (%s)\n",
           p->name, g->path, g->format, g->version[0] ? ", schema " : "", g->version, g->n, comp,
           counted,
           gpu ? "the device ops: a GPU trace, measured_device cuda"
               : "no device compute: a CPU trace, measured_device cpu");
    APPEND(notes, notes_n, at,
           "collectives: %ld ALL_REDUCE buckets; skipped %ld BROADCAST, %ld BARRIER and %ld "
           "host-side calls\n",
           nb, skipped[COMM_BROADCAST], skipped[COMM_BARRIER], host_coll);
    if (marker >= 0)
        APPEND(notes, notes_n, at, "forward %.6f s: the compute before %s\n", fwd_us * 1e-6,
               node_text(g, &g->nodes[marker], t1, 120));
    else
        APPEND(notes, notes_n, at,
               "no node is named as backward: forward 0, all compute up to an "
               "all-reduce is its bucket's backward\n");
    APPEND(notes, notes_n, at, "buckets in trace order (bytes):");
    for (long b = 0; b < nb && b < 32; b++)
        APPEND(notes, notes_n, at, " %lld", bk[b].nd->comm_size);
    APPEND(notes, notes_n, at,
           "%s\nstep %.6f s: forward %.6f, backward %.6f, gap after the "
           "last all-reduce %.6f\nformat: traces/FORMAT.md",
           nb > 32 ? " ..." : "", p->measured_step_s, fwd_us * 1e-6, bwd_us * 1e-6, gap_us * 1e-6);
    free(order);
    free(bk);
    return SS_OK;
}

static int check_opts(const profile_import_opts *o) {
    if (o->params_path)
        return ss_error_set(SS_EUSAGE,
                            "profile import: --params is for torch.profiler traces; %s is a "
                            "Chakra execution trace, whose all-reduces give the parameters",
                            o->trace_path);
    if (o->batch < 1)
        return ss_error_set(SS_EUSAGE,
                            "profile import: %s is a Chakra execution trace, which does not "
                            "record the batch: give --batch B",
                            o->trace_path);
    return SS_OK;
}

static int finish(ck_graph *g, int rc, const profile_import_opts *o, model_profile *out,
                  char *notes, size_t n) {
    if (rc == SS_OK) rc = build_profile(g, o, out, notes, n);
    free(g->nodes);
    free(g->deps);
    return rc;
}

int chakra_import_binary(const profile_import_opts *o, const unsigned char *data, size_t len,
                         int gz, model_profile *out, char *notes, size_t n) {
    int rc = check_opts(o);
    if (rc != SS_OK) return rc;
    ck_graph g = {.path = o->trace_path, .format = gz ? "gzip-compressed binary" : "binary"};
    return finish(&g, decode_binary(&g, data, len), o, out, notes, n);
}

int chakra_import_json(const profile_import_opts *o, const cJSON *root, int gz, model_profile *out,
                       char *notes, size_t n) {
    int rc = check_opts(o);
    if (rc != SS_OK) return rc;
    ck_graph g = {.path = o->trace_path, .format = gz ? "gzip-compressed JSON" : "JSON", .json = 1};
    return finish(&g, decode_json(&g, root), o, out, notes, n);
}
