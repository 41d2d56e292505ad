/* What the two halves of the Chakra import share (chakra_import.h): the decoded graph that
 * chakra_read.c fills from a binary or JSON trace and chakra_import.c orders and maps to layers. */
#ifndef SS_TRACES_CHAKRA_INTERNAL_H
#define SS_TRACES_CHAKRA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;

/* NodeType and CollectiveCommType of et_def.proto */
enum { NODE_COMP = 4, NODE_SEND = 5, NODE_RECV = 6, NODE_COLL = 7 };
enum { COMM_ALL_REDUCE = 0, COMM_BROADCAST = 5, COMM_BARRIER = 9 };

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

/* Decode the nodes of a binary trace (b: len bytes, uncompressed) or of the JSON form into g
 * (g->path and g->format set by the caller); SS_EINPUT naming the file and the byte offset and
 * message, or the workload_graph index, on bad input. g->nodes and g->deps are the caller's to
 * free, whatever the outcome. */
int chakra_decode_binary(ck_graph *g, const unsigned char *b, size_t len);
int chakra_decode_json(ck_graph *g, const struct cJSON *root);

#endif
