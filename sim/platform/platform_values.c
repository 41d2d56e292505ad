/* The generator's values: its defaults, and the parsing and formatting of bandwidths, latencies,
 * speeds, topologies and GPU classes (see platform_gen.h). */
#include "sim/platform/platform_gen.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/status.h"
#include "common/units.h"
#include "sim/compute/gpu_table.h"

static const char *const topology_names[] = {"star", "fat-tree"};

platform_gen_spec platform_gen_default(void) {
    return (platform_gen_spec){.n_hosts = 16,
                               .bandwidth_Bps = 25e9 / 8,
                               .latency_s = 10e-6,
                               .topology = PLATFORM_TOPOLOGY_STAR,
                               .gpu = PLATFORM_GPU_V100,
                               .efficiency = 1.0,
                               .n_ps = 0,
                               .n_nodes = 0,
                               .gpus_per_node = 0,
                               .nics_per_node = 1,
                               .p2p = 1,
                               .intra_bandwidth_Bps = 300e9, /* nvlink3 (platform_gen_nodes.c) */
                               .intra_latency_s = 0.3e-6,
                               .intra_fabric = SIM_FABRIC_NVLINK,
                               .nic_fabric = SIM_FABRIC_ETHERNET};
}

int platform_parse_bandwidth(const char *option, const char *text, double *Bps) {
    double bytes_per_s = 0;
    if (!text || units_parse_bandwidth(text, &bytes_per_s) != 0)
        return ss_error_set(SS_EUSAGE,
                            "%s: cannot read bandwidth '%s' (write a number and a unit: bits as "
                            "\"25Gbps\", \"100Mbps\", bytes as \"1.25GBps\", \"100MBps\")",
                            option, text ? text : "");
    if (!(bytes_per_s > 0) || !isfinite(bytes_per_s))
        return ss_error_set(SS_EUSAGE, "%s: bandwidth '%s' must be > 0 (e.g. \"25Gbps\")", option,
                            text);
    *Bps = bytes_per_s;
    return SS_OK;
}

int platform_parse_latency(const char *option, const char *text, double *seconds) {
    return units_parse_option_time(option, "latency", text, seconds);
}

int platform_parse_topology(const char *option, const char *text, platform_topology *out) {
    if (text && (strcasecmp(text, "fattree") == 0 || strcasecmp(text, "fat_tree") == 0))
        text = "fat-tree";
    for (int i = 0; i < 2; i++) {
        if (text && strcasecmp(text, topology_names[i]) == 0) {
            *out = (platform_topology)i;
            return SS_OK;
        }
    }
    return ss_error_set(SS_EUSAGE, "%s: unknown topology '%s' (valid: star, fat-tree)", option,
                        text ? text : "");
}

int platform_parse_gpu(const char *option, const char *text, platform_gpu *out) {
    const gpu_class *c = NULL;
    int rc = gpu_table_find(option, text, &c);
    for (int i = 0; rc == SS_OK && i < gpu_table_count(); i++)
        if (gpu_table_at(i) == c) *out = (platform_gpu)i;
    return rc;
}

const char *platform_topology_name(platform_topology t) {
    return (unsigned)t < 2 ? topology_names[t] : "?";
}
const char *platform_gpu_name(platform_gpu g) {
    const gpu_class *c = gpu_table_at((int)g);
    return c ? c->name : "?";
}
/* Peak FP32 (non-tensor-core) FLOP/s from the GPU table (sim/compute/gpu_table.c, data sheets). */
double platform_gpu_peak_flops(platform_gpu g) {
    const gpu_class *c = gpu_table_at((int)g);
    return c ? c->peak_flops[SIM_PRECISION_FP32] : 0;
}

/* Largest unit that gives a value >= 1, printed exactly (%.15g). */
static void format_unit(double v, const char *const *names, const double *scales, int n, char *buf,
                        unsigned long buf_bytes) {
    int u = n - 1;
    for (int i = 0; i < n; i++) {
        if (fabs(v) >= scales[i]) {
            u = i;
            break;
        }
    }
    snprintf(buf, buf_bytes, "%.15g%s", v / scales[u], names[u]);
}

void platform_format_bandwidth(double Bps, char *buf, unsigned long buf_bytes) {
    /* in bits, as platforms name bandwidths */
    static const char *const names[] = {"Tbps", "Gbps", "Mbps", "kbps", "bps"};
    static const double scales[] = {1e12, 1e9, 1e6, 1e3, 1};
    format_unit(8 * Bps, names, scales, 5, buf, buf_bytes);
}

void platform_format_latency(double seconds, char *buf, unsigned long buf_bytes) {
    static const char *const names[] = {"s", "ms", "us", "ns", "ps"};
    static const double scales[] = {1, 1e-3, 1e-6, 1e-9, 1e-12};
    if (seconds == 0) {
        snprintf(buf, buf_bytes, "0us");
        return;
    }
    format_unit(seconds, names, scales, 5, buf, buf_bytes);
}

void platform_format_speed(double flops, char *buf, unsigned long buf_bytes) {
    static const char *const names[] = {"Pf", "Tf", "Gf", "Mf", "kf", "f"};
    static const double scales[] = {1e15, 1e12, 1e9, 1e6, 1e3, 1};
    format_unit(flops, names, scales, 6, buf, buf_bytes);
}
