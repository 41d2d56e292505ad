/* Reading a Chakra execution trace (chakra_import.h): the file through zlib, a protobuf decoder
 * of the few messages of Chakra's et_def.proto that the import reads, and the JSON form, into
 * the graph of chakra_internal.h. */
#include "traces/chakra_import.h"
#include "traces/chakra_internal.h"
#include "traces/input_file.h"
#include "common/status.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

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

int chakra_decode_binary(ck_graph *g, const unsigned char *b, size_t len) {
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

int chakra_decode_json(ck_graph *g, const cJSON *root) {
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
