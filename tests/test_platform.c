/* CUnit suite of the platforms: every file of platforms/ and every generator shape loads in
 * SimGrid with the hosts the checker lists; bad platforms and bad options give SS_EUSAGE or
 * SS_EINPUT with a message naming the file and the problem, never a SimGrid abort. */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simgrid/host.h>

#include "common/status.h"
#include "sim/net/cluster.h"
#include "common/isolate.h"
#include "sim/platform/platform_gen.h"
#include "tests/ss_test.h"

typedef struct load_req {
    const char *path;
    int n_workers, n_ps;
} load_req;

typedef struct load_out {
    int simgrid_hosts;
    double alpha_s, bw_Bps; /* route worker 0 -> last worker */
    double ps_alpha_s;      /* route worker 0 -> server 0 (if any) */
    char first_ps[64];
    char last_worker[64];
} load_out;

static int load_run(void *arg, isolate_blob *result) {
    const load_req *r = arg;
    sim_cluster_opts o = {.platform_path = r->path, .n_workers = r->n_workers, .n_ps = r->n_ps};
    sim_cluster *c;
    int st = sim_cluster_open(&o, &c);
    if (st) return st;
    load_out out = {.simgrid_hosts = (int)sg_host_count()};
    sg_host_t h0 = sim_cluster_worker_host(c, 0), hl = sim_cluster_worker_host(c, r->n_workers - 1);
    out.alpha_s = sg_host_get_route_latency(h0, hl);
    out.bw_Bps = sg_host_get_route_bandwidth(h0, hl);
    snprintf(out.last_worker, sizeof out.last_worker, "%s", sg_host_get_name(hl));
    if (r->n_ps) {
        out.ps_alpha_s = sg_host_get_route_latency(h0, sim_cluster_ps_host(c, 0));
        snprintf(out.first_ps, sizeof out.first_ps, "%s",
                 sg_host_get_name(sim_cluster_ps_host(c, 0)));
    }
    isolate_blob_append(result, &out, sizeof out);
    sim_cluster_close(c);
    return SS_OK;
}

static int load(const char *path, int n_workers, int n_ps, load_out *out) {
    load_req r = {path, n_workers, n_ps};
    isolate_blob b = {0};
    int st = isolate_call(load_run, &r, &b);
    if (st == SS_OK && b.bytes == sizeof *out) memcpy(out, b.data, sizeof *out);
    isolate_blob_free(&b);
    return st;
}

/* Every shipped platform: the checker and SimGrid agree on the hosts; all workers map. */
static void test_shipped_platforms(void) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/platforms", SS_SOURCE_DIR);
    DIR *d = opendir(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    int files = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".xml") != 0) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        sim_platform_info info;
        int st = sim_platform_check(path, &info);
        if (st) fprintf(stderr, "\n  %s\n", ss_error_message());
        CU_ASSERT_EQUAL_FATAL(st, SS_OK);
        int workers = info.n_hosts - info.n_ps_hosts;
        load_out out;
        st = load(path, workers, info.n_ps_hosts, &out);
        if (st) fprintf(stderr, "\n  %s: %s\n", path, ss_error_message());
        CU_ASSERT_EQUAL(st, SS_OK);
        CU_ASSERT_EQUAL(out.simgrid_hosts, info.n_hosts);
        CU_ASSERT(out.bw_Bps > 0);
        if (info.n_ps_hosts) CU_ASSERT(strncmp(out.first_ps, "ps-", 3) == 0);
        sim_platform_info_free(&info);
        files++;
    }
    closedir(d);
    CU_ASSERT(files >= 20);
}

/* Route latencies of the documented topologies. */
static void test_routes(void) {
    char path[1024];
    load_out out;
    snprintf(path, sizeof path, "%s/platforms/cluster_25gbps_16.xml", SS_SOURCE_DIR);
    CU_ASSERT_EQUAL_FATAL(load(path, 16, 0, &out), SS_OK);
    SS_CHECK_CLOSE(out.alpha_s, 20e-6, 1e-12, 0);
    SS_CHECK_CLOSE(out.bw_Bps, 25e9 / 8, 0, 1e-12);
    snprintf(path, sizeof path, "%s/platforms/fat_tree_64.xml", SS_SOURCE_DIR);
    CU_ASSERT_EQUAL_FATAL(load(path, 64, 0, &out), SS_OK);
    SS_CHECK_CLOSE(out.alpha_s, 20e-6, 1e-12, 0); /* across leaves: 4 links */
    snprintf(path, sizeof path, "%s/platforms/ps_16w_1ps_5gbps.xml", SS_SOURCE_DIR);
    CU_ASSERT_EQUAL_FATAL(load(path, 16, 1, &out), SS_OK);
    CU_ASSERT_STRING_EQUAL(out.first_ps, "ps-0");
    CU_ASSERT_STRING_EQUAL(out.last_worker, "gpu-15");
    SS_CHECK_CLOSE(out.ps_alpha_s, 50e-6, 1e-12, 0);
}

static const char *gen_file(const platform_gen_spec *sp, const char *name) {
    static char path[512];
    snprintf(path, sizeof path, "%s/tests/%s", SS_BINARY_DIR, name);
    FILE *f = fopen(path, "w");
    SS_ASSERT(f != NULL);
    SS_ASSERT(platform_generate(sp, f) == SS_OK);
    fclose(f);
    return path;
}

/* Generator: star, fat tree (square and prime N), PS, 1024 hosts, all GPU classes. */
static void test_generator_loads(void) {
    struct {
        int n, ps;
        platform_topology topo;
        platform_gpu gpu;
    } cases[] = {{16, 0, PLATFORM_TOPOLOGY_STAR, PLATFORM_GPU_V100},
                 {1024, 0, PLATFORM_TOPOLOGY_STAR, PLATFORM_GPU_A100},
                 {64, 0, PLATFORM_TOPOLOGY_FAT_TREE, PLATFORM_GPU_H100},
                 {1024, 0, PLATFORM_TOPOLOGY_FAT_TREE, PLATFORM_GPU_V100},
                 {13, 0, PLATFORM_TOPOLOGY_FAT_TREE, PLATFORM_GPU_V100},
                 {16, 2, PLATFORM_TOPOLOGY_STAR, PLATFORM_GPU_V100},
                 {64, 4, PLATFORM_TOPOLOGY_FAT_TREE, PLATFORM_GPU_V100}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        platform_gen_spec sp = platform_gen_default();
        sp.n_hosts = cases[i].n;
        sp.n_ps = cases[i].ps;
        sp.topology = cases[i].topo;
        sp.gpu = cases[i].gpu;
        char name[64];
        snprintf(name, sizeof name, "gen_%zu.xml", i);
        const char *path = gen_file(&sp, name);
        load_out out;
        int st = load(path, cases[i].n, cases[i].ps, &out);
        if (st) fprintf(stderr, "\n  case %zu: %s\n", i, ss_error_message());
        CU_ASSERT_EQUAL(st, SS_OK);
        CU_ASSERT_EQUAL(out.simgrid_hosts, cases[i].n + cases[i].ps);
        SS_CHECK_CLOSE(out.bw_Bps, 25e9 / 8, 0, 1e-12);
    }
}

static void test_parse_units(void) {
    double v;
    /* bytes per second: bits only in the text */
    CU_ASSERT_EQUAL(platform_parse_bandwidth("--bandwidth", "25Gbps", &v), SS_OK);
    SS_CHECK_CLOSE(v, 25e9 / 8, 0, 1e-15);
    CU_ASSERT_EQUAL(platform_parse_bandwidth("--bandwidth", "100MBps", &v), SS_OK);
    SS_CHECK_CLOSE(v, 100e6, 0, 1e-15);
    CU_ASSERT_EQUAL(platform_parse_latency("--latency", "5us", &v), SS_OK);
    SS_CHECK_CLOSE(v, 5e-6, 0, 1e-15);
    CU_ASSERT_EQUAL(platform_parse_bandwidth("--bandwidth", "0Gbps", &v), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "--bandwidth"));
    CU_ASSERT_EQUAL(platform_parse_bandwidth("--bandwidth", "fast", &v), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "25Gbps"));
    CU_ASSERT_EQUAL(platform_parse_bandwidth("--bandwidth", "25", &v), SS_EUSAGE);
    CU_ASSERT_EQUAL(platform_parse_latency("--latency", "5", &v), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "--latency"));
    CU_ASSERT_EQUAL(platform_parse_latency("--latency", "-1us", &v), SS_EUSAGE);
    platform_topology t;
    CU_ASSERT_EQUAL(platform_parse_topology("--topology", "fat-tree", &t), SS_OK);
    CU_ASSERT_EQUAL(t, PLATFORM_TOPOLOGY_FAT_TREE);
    CU_ASSERT_EQUAL(platform_parse_topology("--topology", "torus", &t), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "star, fat-tree"));
    platform_gpu g;
    CU_ASSERT_EQUAL(platform_parse_gpu("--gpu", "H100", &g), SS_OK);
    CU_ASSERT_EQUAL(g, PLATFORM_GPU_H100);
    CU_ASSERT_EQUAL(platform_parse_gpu("--gpu", "k80", &g), SS_EUSAGE);
    char buf[64];
    platform_format_bandwidth(25e9 / 8, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "25Gbps");
    platform_format_latency(5e-6, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "5us");
    platform_gen_spec sp = platform_gen_default();
    sp.n_hosts = 0;
    CU_ASSERT_EQUAL(platform_generate(&sp, stdout), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "--hosts"));
}

/* The sketch in the generated file's comment names every host once (2 hosts: no "..." and no
 * gpu-1 twice), in a star and in a fat tree of one leaf. */
static int count_in(const char *text, const char *word) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, word)); p += strlen(word))
        n++;
    return n;
}

/* Occurrences of host gpu-i (not the prefix of gpu-i0). */
static int count_host(const char *text, int i) {
    char name[32];
    int n = snprintf(name, sizeof name, "gpu-%d", i), count = 0;
    for (const char *p = text; (p = strstr(p, name)); p += n)
        count += !isdigit((unsigned char)p[n]);
    return count;
}

static void test_generator_sketch(void) {
    static const platform_topology topos[] = {PLATFORM_TOPOLOGY_STAR, PLATFORM_TOPOLOGY_FAT_TREE};
    for (int n = 1; n <= 5; n++) {
        for (int k = 0; k < 2; k++) {
            char *text = NULL;
            size_t len = 0;
            FILE *f = open_memstream(&text, &len);
            platform_gen_spec sp = platform_gen_default();
            sp.n_hosts = n;
            sp.topology = topos[k];
            CU_ASSERT_EQUAL_FATAL(platform_generate(&sp, f), SS_OK);
            fclose(f);
            char *end = strstr(text, "-->");
            CU_ASSERT_PTR_NOT_NULL_FATAL(end);
            *end = '\0'; /* the comment only */
            int ok = count_host(text, 0) == 1 && count_host(text, n - 1) == 1;
            for (int i = 1; i < n - 1; i++)
                ok &= count_host(text, i) <= 1;
            if (n <= 3 && k == 0) ok &= count_in(text, "...") == 0;
            if (!ok) fprintf(stderr, "\n  %d hosts, %s:\n%s\n", n, k ? "fat tree" : "star", text);
            CU_ASSERT(ok);
            free(text);
        }
    }
}

/* A bad platform: the status, and the message names the file and the problem. */
static void expect_bad(const char *text, int n_workers, int want_status, const char *want_msg) {
    char path[512];
    snprintf(path, sizeof path, "%s/tests/bad_platform.xml", SS_BINARY_DIR);
    if (text) {
        FILE *f = fopen(path, "w");
        SS_ASSERT(f != NULL);
        fputs(text, f);
        fclose(f);
    } else {
        remove(path);
    }
    load_out out;
    int st = load(path, n_workers, 0, &out);
    const char *msg = ss_error_message();
    if (st != want_status || !strstr(msg, want_msg) || !strstr(msg, "bad_platform.xml"))
        fprintf(stderr, "\n  got status %d, message: %s (want %d, '%s')\n", st, msg, want_status,
                want_msg);
    CU_ASSERT_EQUAL(st, want_status);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, want_msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "bad_platform.xml"));
}

#define HEAD                                                                                       \
    "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
#define CLUSTER(attrs)                                                                             \
    HEAD "<platform version=\"4.1\">\n  <cluster id=\"c\" prefix=\"gpu-\" suffix=\"\" " attrs      \
         "/>\n</platform>\n"

static void test_bad_platforms(void) {
    const char *ok = "radical=\"0-7\" speed=\"15.7Tf\" bw=\"25Gbps\" lat=\"5us\"";
    (void)ok;
    expect_bad(NULL, 4, SS_EINPUT, "cannot open");
    expect_bad(HEAD "<platform version=\"4.1\">\n  <cluster id=\"c\"\n</platform>\n", 4, SS_EINPUT,
               "bad_platform.xml:5: malformed XML");
    expect_bad(CLUSTER("radical=\"0-7\" speed=\"15.7Tf\" bw=\"25Gbps\" lat=\"5us\""), 16, SS_EUSAGE,
               "has 8 hosts; 16 workers requested");
    expect_bad(CLUSTER("radical=\"0-7\" speed=\"15.7Tf\" bw=\"0Gbps\" lat=\"5us\""), 4, SS_EINPUT,
               "bandwidth must be > 0");
    expect_bad(CLUSTER("radical=\"0-7\" speed=\"15.7Tf\" bw=\"fast\" lat=\"5us\""), 4, SS_EINPUT,
               "bw=\"fast\": not a bandwidth");
    expect_bad(CLUSTER("radical=\"0-7\" speed=\"15.7Tf\" bw=\"25Gbps\" lat=\"soon\""), 4, SS_EINPUT,
               "lat=\"soon\"");
    expect_bad(CLUSTER("radical=\"0-7\" speed=\"fast\" bw=\"25Gbps\" lat=\"5us\""), 4, SS_EINPUT,
               "not a speed");
    expect_bad(CLUSTER("radical=\"0-7\" speed=\"1Gf\" bw=\"25Gbps\" lat=\"5us\" topology=\"RING\" "
                       "topo_parameters=\"1\""),
               4, SS_EINPUT, "unknown topology=\"RING\"");
    expect_bad(CLUSTER("radical=\"0-x\" speed=\"1Gf\" bw=\"25Gbps\" lat=\"5us\""), 4, SS_EINPUT,
               "radical");
    expect_bad(CLUSTER("speed=\"1Gf\" bw=\"25Gbps\" lat=\"5us\""), 4, SS_EINPUT,
               "missing attribute 'radical'");
    expect_bad("<?xml version='1.0'?>\n<platform version=\"4.1\">\n<host id=\"a\" speed=\"1Gf\"/>\n"
               "</platform>\n",
               1, SS_EINPUT, "DOCTYPE");
    expect_bad(HEAD "<platform version=\"4.1\">\n<host id=\"a\" speed=\"1Gf\"/>\n<host id=\"a\" "
                    "speed=\"1Gf\"/>\n</platform>\n",
               1, SS_EINPUT, "'a' is used twice");
    expect_bad(HEAD "<platform version=\"3\">\n<host id=\"a\" speed=\"1Gf\"/>\n</platform>\n", 1,
               SS_EINPUT, "version 4.1");
    expect_bad(HEAD "<platform version=\"4.1\">\n<zone id=\"z\" routing=\"Magic\">\n<host id=\"a\" "
                    "speed=\"1Gf\"/>\n</zone>\n</platform>\n",
               1, SS_EINPUT, "unknown routing=\"Magic\"");
    expect_bad(HEAD "<notaplatform/>\n", 1, SS_EINPUT, "expected <platform>");
}

/* sim_platform_check on the file `path` and sim_platform_check_mem on its first `size` bytes (all
 * when size < 0), named by the same path: the same status and message, or the same hosts. */
static void check_mem_equals_file(const char *path, long size) {
    FILE *f = fopen(path, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    char *bytes = malloc(1 << 20);
    size_t n = fread(bytes, 1, 1 << 20, f);
    fclose(f);
    if (size >= 0 && (size_t)size < n) {
        n = (size_t)size;
        f = fopen(path, "wb"); /* the cut file, for the file variant */
        CU_ASSERT_EQUAL_FATAL(fwrite(bytes, 1, n, f), n);
        fclose(f);
    }
    sim_platform_info a, b;
    const int sa = sim_platform_check(path, &a);
    char message[1024];
    snprintf(message, sizeof message, "%s", ss_error_message());
    const int sb = sim_platform_check_mem(path, bytes, n, &b);
    CU_ASSERT_EQUAL(sa, sb);
    if (sa != SS_OK) CU_ASSERT_STRING_EQUAL(message, ss_error_message());
    if (sa == SS_OK && sb == SS_OK) {
        CU_ASSERT_EQUAL_FATAL(a.n_hosts, b.n_hosts);
        CU_ASSERT_EQUAL(a.n_ps_hosts, b.n_ps_hosts);
        CU_ASSERT_EQUAL(a.n_nodes, b.n_nodes);
        CU_ASSERT_EQUAL(a.gpus_per_node, b.gpus_per_node);
        CU_ASSERT_EQUAL(a.nics_per_node, b.nics_per_node);
        for (int i = 0; i < a.n_hosts; i++) {
            CU_ASSERT_STRING_EQUAL(a.host_names[i], b.host_names[i]);
            CU_ASSERT_EQUAL(a.host_is_ps[i], b.host_is_ps[i]);
        }
    }
    sim_platform_info_free(&a);
    sim_platform_info_free(&b);
    free(bytes);
}

/* The bytes of a platform in memory check as the file does: every shipped platform, whole and
 * cut in the middle, and bad ones (a NUL byte, an empty file, errors of the checker). */
static void test_check_mem_equals_file(void) {
    char dir[512], path[1024];
    snprintf(dir, sizeof dir, "%s/platforms", SS_SOURCE_DIR);
    DIR *d = opendir(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".xml") != 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        check_mem_equals_file(path, -1);
    }
    closedir(d);
    snprintf(path, sizeof path, "%s/tests/mem_platform.xml", SS_BINARY_DIR);
    static const char nul[] = HEAD "<platform version=\"4.1\">\n<host id=\"a\0\" speed=\"1Gf\"/>\n"
                                   "</platform>\n";
    const char *texts[] = {
        CLUSTER("radical=\"0-7,9\" speed=\"15.7Tf\" bw=\"25Gbps\" lat=\"5us\""),
        CLUSTER("radical=\"0-x\" speed=\"1Gf\" bw=\"25Gbps\" lat=\"5us\""),
        HEAD "<platform version=\"4.1\">\n<host id=\"a\" speed=\"1Gf\"/>\n<host id=\"a\" "
             "speed=\"1Gf\"/>\n</platform>\n",
        HEAD "<notaplatform/>\n",
        nul,
        ""};
    const size_t sizes[] = {strlen(texts[0]), strlen(texts[1]), strlen(texts[2]),
                            strlen(texts[3]), sizeof nul - 1,   0};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        FILE *f = fopen(path, "wb");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        CU_ASSERT_EQUAL(fwrite(texts[i], 1, sizes[i], f), sizes[i]);
        fclose(f);
        check_mem_equals_file(path, -1);
        check_mem_equals_file(path, (long)sizes[i] / 2);
    }
    remove(path);
}

/* A second engine in one process is refused with a clear message (not a SimGrid abort). */
static int twice_run(void *arg, isolate_blob *result) {
    (void)result;
    sim_cluster_opts o = {.platform_path = arg, .n_workers = 2};
    sim_cluster *a, *b;
    int st = sim_cluster_open(&o, &a);
    if (st) return st;
    st = sim_cluster_open(&o, &b);
    sim_cluster_close(a);
    return st;
}

static void test_engine_once(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/platforms/cluster_25gbps_16.xml", SS_SOURCE_DIR);
    isolate_blob b = {0};
    int st = isolate_call(twice_run, path, &b);
    CU_ASSERT_EQUAL(st, SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "isolate_call"));
    isolate_blob_free(&b);
}

/* Bytes of the file at path (NULL: cannot read); *n its length. */
static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, len = 0;
    for (size_t got = 1; got > 0;) {
        if (len + 65536 > cap) buf = realloc(buf, cap = 2 * cap + 65536);
        got = fread(buf + len, 1, 65536, f);
        len += got;
    }
    fclose(f);
    *n = len;
    return buf;
}

/* platform_temp_generate: the platform_generate bytes, read by SimGrid in a forked child, with no
 * name in TMPDIR at any time (so nothing is left when the process is killed); a TMPDIR that
 * cannot hold it is named in the error. */
static void test_platform_temp(void) {
    char dir[600], *old = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
    snprintf(dir, sizeof dir, "%s/tests/platform_temp_XXXXXX", SS_BINARY_DIR);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    setenv("TMPDIR", dir, 1);
    platform_gen_spec sp = platform_gen_default();
    sp.n_hosts = 64;
    sp.topology = PLATFORM_TOPOLOGY_FAT_TREE;
    platform_temp t;
    int st = platform_temp_generate(&sp, &t);
    CU_ASSERT_EQUAL_FATAL(st, SS_OK);
    CU_ASSERT_EQUAL(t.named, 0); /* Linux has /proc */
    CU_ASSERT_EQUAL(ss_test_dir_entries(dir), 0);
    char *want = NULL;
    size_t want_n = 0, got_n = 0;
    FILE *m = open_memstream(&want, &want_n);
    CU_ASSERT_EQUAL(platform_generate(&sp, m), SS_OK);
    fclose(m);
    char *got = slurp(t.path, &got_n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    CU_ASSERT(got_n == want_n && memcmp(got, want, want_n) == 0);
    free(got);
    free(want);
    load_out out;
    st = load(t.path, 64, 0, &out); /* in a forked child, as every simulation runs */
    if (st) fprintf(stderr, "\n  %s: %s\n", t.path, ss_error_message());
    CU_ASSERT_EQUAL(st, SS_OK);
    CU_ASSERT_EQUAL(out.simgrid_hosts, 64);
    const int fd = t.fd;
    platform_temp_close(&t);
    CU_ASSERT_EQUAL(fcntl(fd, F_GETFD), -1);
    CU_ASSERT_EQUAL(t.fd, -1);
    platform_temp_close(&t); /* twice: nothing */
    CU_ASSERT_EQUAL(ss_test_dir_entries(dir), 0);
    rmdir(dir);
    /* a TMPDIR that does not exist */
    st = platform_temp_generate(&sp, &t);
    CU_ASSERT_EQUAL(st, SS_EIO);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), dir));
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "TMPDIR"));
    CU_ASSERT_EQUAL(t.fd, -1);
    if (old)
        setenv("TMPDIR", old, 1);
    else
        unsetenv("TMPDIR");
    free(old);
}

/* The isolation: a child that aborts gives SS_EIO naming the signal, the parent lives on. */
static int abort_run(void *arg, isolate_blob *result) {
    (void)arg;
    (void)result;
    abort();
}

static void test_isolate_abort(void) {
    isolate_blob b = {0};
    int st = isolate_call(abort_run, NULL, &b);
    CU_ASSERT_EQUAL(st, SS_EIO);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "signal 6"));
    isolate_blob_free(&b);
}

static CU_TestInfo platform_tests[] = {
    {"sim_platform_check + SimGrid on every platforms/*.xml", test_shipped_platforms},
    {"route latency and bandwidth of star, fat tree, PS layouts", test_routes},
    {"platform_generate outputs load in SimGrid", test_generator_loads},
    {"platform_parse_* units and errors", test_parse_units},
    {"platform_generate sketch names each host once", test_generator_sketch},
    {"sim_cluster_open bad platforms: SS_EINPUT/SS_EUSAGE, no abort", test_bad_platforms},
    {"sim_platform_check_mem: same hosts or message as the file", test_check_mem_equals_file},
    {"sim_cluster_open twice in one process", test_engine_once},
    {"isolate_call child abort", test_isolate_abort},
    {"platform_temp_generate: SimGrid reads it, no name in TMPDIR", test_platform_temp},
    CU_TEST_INFO_NULL};

int main(void) {
    CU_SuiteInfo suites[] = {{"platforms", NULL, NULL, NULL, NULL, platform_tests},
                             CU_SUITE_INFO_NULL};
    return ss_test_main(suites);
}
