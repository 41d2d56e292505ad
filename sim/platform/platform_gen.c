/* Platform generator of `syncsim platform` (see platform_gen.h): flat platforms here, servers of
 * several GPUs in platform_gen_nodes.c. */
#include "sim/platform/platform_gen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/afile.h"
#include "common/status.h"
#include "sim/compute/gpu_table.h"
#include "common/units.h"

int platform_spec_validate(const platform_gen_spec *s) {
    SS_ASSERT(s != NULL);
    if (s->n_hosts < 1 || s->n_hosts > 65536)
        return ss_error_set(SS_EUSAGE, "--hosts: %d, need 1 to 65536", s->n_hosts);
    if (!(s->bandwidth_Bps > 0) || !isfinite(s->bandwidth_Bps))
        return ss_error_set(SS_EUSAGE, "--bandwidth: %g bps, need > 0 (e.g. \"25Gbps\")",
                            8 * s->bandwidth_Bps);
    if (!(s->latency_s >= 0) || !isfinite(s->latency_s))
        return ss_error_set(SS_EUSAGE, "--latency: %g s, need >= 0 (e.g. \"5us\")", s->latency_s);
    if ((unsigned)s->topology > PLATFORM_TOPOLOGY_FAT_TREE)
        return ss_error_set(SS_EUSAGE, "--topology: unknown topology %d (valid: star, fat-tree)",
                            (int)s->topology);
    if (!gpu_table_at((int)s->gpu)) {
        char names[128];
        return ss_error_set(SS_EUSAGE, "--gpu: unknown GPU class %d (valid: %s)", (int)s->gpu,
                            gpu_table_names(", ", names, sizeof names));
    }
    if (!(s->efficiency > 0 && s->efficiency <= 1))
        return ss_error_set(SS_EUSAGE, "efficiency: %g, need 0 < efficiency <= 1", s->efficiency);
    if (s->n_ps < 0 || s->n_ps > 1024)
        return ss_error_set(SS_EUSAGE, "--ps: %d, need 0 to 1024", s->n_ps);
    if (s->routed && (s->topology != PLATFORM_TOPOLOGY_STAR || s->n_nodes != 0))
        return ss_error_set(SS_EUSAGE, "--network-model ns-3: the generated platform must be a "
                                       "star without --nodes (ns-3 accepts explicit one-link "
                                       "routes only: no fat-tree cluster, no node zones)");
    if (s->routed && s->n_hosts + s->n_ps > PLATFORM_ROUTED_MAX_HOSTS)
        return ss_error_set(SS_EUSAGE,
                            "--network-model ns-3: %d hosts (workers + PS); the routed star "
                            "ns-3 needs is written for at most %d",
                            s->n_hosts + s->n_ps, PLATFORM_ROUTED_MAX_HOSTS);
    if (s->n_nodes != 0) return platform_spec_validate_nodes(s);
    return SS_OK;
}

/* Hosts per leaf switch of the fat tree: the smallest divisor of n that is >= sqrt(n). */
static int fat_tree_leaf_hosts(int n) {
    int d = (int)ceil(sqrt((double)n));
    while (n % d != 0)
        d++;
    return d;
}

/* The comment's sketch of a star: every host once (the first two, then "..." and the last only
 * when hosts are left out), and its route. */
static void sketch_star(const platform_gen_spec *s, int n, const char *bw, FILE *out) {
    char lat2[64];
    platform_format_latency(2 * s->latency_s, lat2, sizeof lat2);
    fprintf(out, "       gpu-0 ==[l0]==+%s\n",
            n == 1 ? "== switch (non-blocking: no shared backbone link)" : "");
    if (n >= 2)
        fprintf(out, "       gpu-1 ==[l1]==+== switch (non-blocking: no shared backbone link)\n");
    if (n == 3) fprintf(out, "       gpu-2 ==[l2]==+\n");
    if (n > 3) fprintf(out, "         ...         |\n       gpu-%d ==[l%d]=+\n", n - 1, n - 1);
    fprintf(out,
            "\n       Route gpu-i -> gpu-j: li.UP, lj.DOWN (SPLITDUPLEX: each direction has\n"
            "       its own bandwidth): latency %s, bandwidth %s per direction.\n",
            lat2, bw);
}

/* The comment's sketch of the two-level fat tree and its routes. */
static void sketch_fat_tree(const platform_gen_spec *s, int n, int leaf, int leaves, const char *bw,
                            FILE *out) {
    char lat2[64];
    platform_format_latency(4 * s->latency_s, lat2, sizeof lat2);
    fprintf(out,
            "       Two-level fat tree, non-blocking: %d leaf switches of %d hosts, %d spine\n"
            "       switches, each leaf linked once to every spine.\n\n"
            "           spine-0 ... spine-%d\n"
            "             |  \\     /  |\n",
            leaves, leaf, leaf, leaf - 1);
    /* one leaf: its hosts once, no second group */
    if (leaves > 1)
        fprintf(out,
                "           leaf-0  ...  leaf-%d\n"
                "           / | \\         / | \\\n"
                "        gpu-0 .. gpu-%d   ...  gpu-%d\n\n",
                leaves - 1, leaf - 1, n - 1);
    else if (n > 1)
        fprintf(out, "              leaf-0\n              / | \\\n        gpu-0 .. gpu-%d\n\n",
                n - 1);
    else
        fprintf(out, "              leaf-0\n                |\n              gpu-0\n\n");
    fprintf(out,
            "       Route across leaves: host link, leaf->spine, spine->leaf, host link:\n"
            "       latency %s, bandwidth %s; inside one leaf: 2 links.\n",
            lat2, bw);
}

/* The comment's lines on the parameter servers. */
static void sketch_servers(const platform_gen_spec *s, int n, int fat, const char *bw, FILE *out) {
    if (s->n_ps && fat)
        fprintf(out,
                "\n       Parameter servers: the last %d hosts, gpu-%d .. gpu-%d (prop ps_last).\n",
                s->n_ps, s->n_hosts, n - 1);
    else if (s->n_ps)
        fprintf(out,
                "\n       Parameter servers ps-0 .. ps-%d (prop role=ps) hang off the workers'\n"
                "       switch through a FATPIPE link of 0 latency, each with its own %s link:\n"
                "       a push gpu-i -> ps-k crosses gpu-i's link and ps-k's link (the incast\n"
                "       bottleneck).\n",
                s->n_ps - 1, bw);
}

/* The star's separate cluster of parameter servers, joined to the workers' switch. */
static void write_server_cluster(const platform_gen_spec *s, const char *speed, const char *bw,
                                 const char *lat, const char *gpu, FILE *out) {
    fprintf(out,
            "    <cluster id=\"servers\" prefix=\"ps-\" suffix=\"\" radical=\"0-%d\" "
            "speed=\"%s\"\n"
            "             bw=\"%s\" lat=\"%s\" sharing_policy=\"SPLITDUPLEX\">\n"
            "      <prop id=\"gpu\" value=\"%s\"/>\n"
            "      <prop id=\"role\" value=\"ps\"/>\n"
            "    </cluster>\n"
            "    <link id=\"ps-uplink\" bandwidth=\"%s\" latency=\"0us\" "
            "sharing_policy=\"FATPIPE\"/>\n"
            "    <zoneRoute src=\"workers\" dst=\"servers\" gw_src=\"gpu-workers_router\" "
            "gw_dst=\"ps-servers_router\">\n"
            "      <link_ctn id=\"ps-uplink\"/>\n"
            "    </zoneRoute>\n",
            s->n_ps - 1, speed, bw, lat, gpu, bw);
}

/* Host h of the routed star: workers gpu-0..gpu-(N-1), then servers ps-0..ps-(K-1). */
static void routed_host_name(const platform_gen_spec *s, int h, char *buf, size_t n) {
    if (h < s->n_hosts)
        snprintf(buf, n, "gpu-%d", h);
    else
        snprintf(buf, n, "ps-%d", h - s->n_hosts);
}

/* The routed star's hosts, router, links and routes (platform_gen.h). */
static void write_routed_body(const platform_gen_spec *s, const char *speed, const char *bw,
                              const char *lat, FILE *out) {
    int n = s->n_hosts + s->n_ps;
    char a[32], b[32];
    const char *gpu = platform_gpu_name(s->gpu);
    for (int h = 0; h < n; h++) {
        routed_host_name(s, h, a, sizeof a);
        fprintf(out, "    <host id=\"%s\" speed=\"%s\">\n      <prop id=\"gpu\" value=\"%s\"/>\n",
                a, speed, gpu);
        if (h >= s->n_hosts) fprintf(out, "      <prop id=\"role\" value=\"ps\"/>\n");
        fprintf(out, "    </host>\n");
    }
    fprintf(out, "    <router id=\"switch\"/>\n");
    for (int h = 0; h < n; h++) {
        routed_host_name(s, h, a, sizeof a);
        fprintf(out,
                "    <link id=\"%s-link\" bandwidth=\"%s\" latency=\"%s\" "
                "sharing_policy=\"SPLITDUPLEX\"/>\n",
                a, bw, lat);
    }
    /* one-link routes: the links ns-3 builds; symmetrical, so the way back uses .DOWN */
    for (int h = 0; h < n; h++) {
        routed_host_name(s, h, a, sizeof a);
        fprintf(out,
                "    <route src=\"%s\" dst=\"switch\"><link_ctn id=\"%s-link\" "
                "direction=\"UP\"/></route>\n",
                a, a);
    }
    for (int i = 0; i < n; i++) {
        routed_host_name(s, i, a, sizeof a);
        for (int j = i + 1; j < n; j++) {
            routed_host_name(s, j, b, sizeof b);
            fprintf(out,
                    "    <route src=\"%s\" dst=\"%s\"><link_ctn id=\"%s-link\" "
                    "direction=\"UP\"/><link_ctn id=\"%s-link\" direction=\"DOWN\"/></route>\n",
                    a, b, a, b);
        }
    }
}

int platform_generate_routed(const platform_gen_spec *s, FILE *out) {
    char bw[64], lat[64], lat2[64], speed[64];
    platform_format_bandwidth(s->bandwidth_Bps, bw, sizeof bw);
    platform_format_latency(s->latency_s, lat, sizeof lat);
    platform_format_latency(2 * s->latency_s, lat2, sizeof lat2);
    platform_format_speed(platform_gpu_peak_flops(s->gpu) * s->efficiency, speed, sizeof speed);
    int n = s->n_hosts + s->n_ps;
    fprintf(out, "<?xml version='1.0'?>\n"
                 "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                 "<platform version=\"4.1\">\n");
    fprintf(out,
            "  <!-- Generated by `syncsim platform` for the ns-3 model: %d x %s (%s each =\n"
            "       peak FP32 x %g), star topology written as explicit routes, every link %s\n"
            "       with %s latency%s.\n\n"
            "       host-i ==[host-i-link]== switch   (one link per host, SPLITDUPLEX)\n\n"
            "       Route host-i -> host-j: host-i-link.UP, host-j-link.DOWN: latency %s,\n"
            "       bandwidth %s per direction (the same times as the <cluster> star under\n"
            "       LV08 and CM02). ns-3 keeps the one-link routes host -> switch: one\n"
            "       full-duplex point-to-point link per host.\n",
            n, platform_gpu_name(s->gpu), speed, s->efficiency, bw, lat,
            s->n_ps ? ", plus parameter servers ps-k (role=ps) on the same switch" : "", lat2, bw);
    fprintf(out, "  -->\n  <zone id=\"world\" routing=\"Full\">\n");
    write_routed_body(s, speed, bw, lat, out);
    fprintf(out, "  </zone>\n</platform>\n");
    if (fflush(out) != 0 || ferror(out))
        return ss_error_set(SS_EIO, "platform: writing the platform failed");
    return SS_OK;
}

int platform_generate(const platform_gen_spec *s, FILE *out) {
    int st = platform_spec_validate(s);
    if (st) return st;
    if (s->n_nodes > 0) return platform_generate_nodes(s, out);
    if (s->routed) return platform_generate_routed(s, out);
    char bw[64], lat[64], speed[64];
    platform_format_bandwidth(s->bandwidth_Bps, bw, sizeof bw);
    platform_format_latency(s->latency_s, lat, sizeof lat);
    double flops = platform_gpu_peak_flops(s->gpu) * s->efficiency;
    platform_format_speed(flops, speed, sizeof speed);
    const char *gpu = platform_gpu_name(s->gpu);
    int fat = s->topology == PLATFORM_TOPOLOGY_FAT_TREE;
    /* A fat tree holds its PS hosts; a star puts them in a cluster of their own. */
    int n = s->n_hosts + (fat ? s->n_ps : 0);
    int leaf = fat ? fat_tree_leaf_hosts(n) : n, leaves = n / leaf;

    fprintf(out, "<?xml version='1.0'?>\n"
                 "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                 "<platform version=\"4.1\">\n");
    fprintf(out,
            "  <!-- Generated by `syncsim platform`: %d x %s (%s each = peak FP32 x %g),\n"
            "       %s topology, every link %s with %s latency%s.\n\n",
            n, gpu, speed, s->efficiency, platform_topology_name(s->topology), bw, lat,
            s->n_ps ? ", plus parameter servers" : "");
    if (!fat)
        sketch_star(s, n, bw, out);
    else
        sketch_fat_tree(s, n, leaf, leaves, bw, out);
    sketch_servers(s, n, fat, bw, out);
    fprintf(out, "  -->\n");
    fprintf(out, "  <zone id=\"world\" routing=\"Full\">\n");
    fprintf(out,
            "    <cluster id=\"workers\" prefix=\"gpu-\" suffix=\"\" radical=\"0-%d\" "
            "speed=\"%s\"\n"
            "             bw=\"%s\" lat=\"%s\" sharing_policy=\"SPLITDUPLEX\"%s",
            n - 1, speed, bw, lat, fat ? "\n" : ">\n");
    if (fat)
        fprintf(out, "             topology=\"FAT_TREE\" topo_parameters=\"2;%d,%d;1,%d;1,1\">\n",
                leaf, leaves, leaf);
    fprintf(out, "      <prop id=\"gpu\" value=\"%s\"/>\n", gpu);
    if (s->n_ps && fat) fprintf(out, "      <prop id=\"ps_last\" value=\"%d\"/>\n", s->n_ps);
    fprintf(out, "    </cluster>\n");
    if (s->n_ps && !fat) write_server_cluster(s, speed, bw, lat, gpu, out);
    fprintf(out, "  </zone>\n</platform>\n");
    if (fflush(out) != 0 || ferror(out))
        return ss_error_set(SS_EIO, "platform: writing the platform failed");
    return SS_OK;
}

int platform_generate_file(const platform_gen_spec *spec, const char *path) {
    afile f;
    int rc = afile_open(&f, path);
    if (rc != SS_OK) return rc;
    if ((rc = platform_generate(spec, f.fp)) != SS_OK) {
        afile_abort(&f);
        return rc;
    }
    return afile_commit(&f);
}

double platform_tier_latency_s(double bandwidth_Bps) {
    const double bps = 8 * bandwidth_Bps; /* the tiers are named in bits */
    return bps <= 5e9    ? 25e-6
           : bps <= 10e9 ? 15e-6
           : bps <= 25e9 ? 10e-6
           : bps <= 40e9 ? 5e-6
                         : 1e-6;
}

/* The node options of a run (--nodes > 0): --gpus-per-node, --nics-per-node, --intra and its
 * overrides --intra-bandwidth and --intra-latency, --fabric, --pcie-switch, --p2p. */
static int node_spec_from_config(const run_config *cfg, platform_gen_spec *spec) {
    int rc;
    spec->n_nodes = cfg->nodes;
    spec->gpus_per_node = cfg->gpus_per_node;
    spec->nics_per_node = cfg->nics_per_node;
    spec->pcie_switch = cfg->pcie_switch;
    spec->p2p = strcasecmp(cfg->p2p, "off") != 0;
    if ((rc = platform_apply_intra("--intra", cfg->intra, spec)) ||
        (rc = platform_parse_nic_fabric("--fabric", cfg->fabric, &spec->nic_fabric)))
        return rc;
    if (cfg->intra_bandwidth[0] &&
        (rc = platform_parse_bandwidth("--intra-bandwidth", cfg->intra_bandwidth,
                                       &spec->intra_bandwidth_Bps)))
        return rc;
    if (cfg->intra_latency[0] && (rc = platform_parse_latency("--intra-latency", cfg->intra_latency,
                                                              &spec->intra_latency_s)))
        return rc;
    return SS_OK;
}

int platform_spec_from_config(const run_config *cfg, int n_hosts, int n_ps,
                              platform_gen_spec *spec) {
    *spec = platform_gen_default();
    int rc;
    spec->n_hosts = n_hosts;
    spec->n_ps = n_ps;
    spec->efficiency = cfg->gpu_efficiency;
    if ((rc = platform_parse_bandwidth("--bandwidth", cfg->bandwidth, &spec->bandwidth_Bps)) ||
        (strcmp(cfg->latency, "tier") &&
         (rc = platform_parse_latency("--latency", cfg->latency, &spec->latency_s))) ||
        (rc = platform_parse_topology("--topology", cfg->topology, &spec->topology)) ||
        (rc = platform_parse_gpu("--gpu", cfg->gpu, &spec->gpu)))
        return rc;
    if (!strcmp(cfg->latency, "tier"))
        spec->latency_s = platform_tier_latency_s(spec->bandwidth_Bps);
    /* ns-3 cannot load a <cluster> (platforms/README.md): write the star as explicit routes */
    spec->routed = !strcasecmp(cfg->network_model, "ns-3");
    if ((rc = cfg->nodes > 0 ? node_spec_from_config(cfg, spec) : SS_OK)) return rc;
    return platform_spec_validate(spec);
}
