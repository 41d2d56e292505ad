/* Platform generator for `syncsim platform`: prints a SimGrid platform XML of N GPU hosts.
 *
 *     platform_gen_spec s = platform_gen_default();         // 16 v100 hosts, 25Gbps, 10us, star
 *     if (platform_parse_bandwidth("--bandwidth", "25Gbps", &s.bandwidth_Bps) != SS_OK) ...
 *     if (platform_parse_latency("--latency", "5us", &s.latency_s) != SS_OK) ...
 *     if (platform_generate(&s, stdout) != SS_OK) fprintf(stderr, "%s\n", ss_error_message());
 *
 * What it writes (see platforms/README.md):
 * - star: one <cluster> of N hosts "gpu-0".."gpu-(N-1)", each with a private full-duplex link
 *   (bandwidth, latency) to a non-blocking switch (no backbone link: a shared backbone
 *   constraint would also make SimGrid's solver touch every flow at every event): route
 *   gpu-i -> gpu-j = link_i.UP, link_j.DOWN; route latency 2 x latency;
 * - fat-tree: a two-level non-blocking fat tree (<cluster topology="FAT_TREE">) with L leaf
 *   switches of D hosts (N = L x D, D the smallest divisor of N >= sqrt(N)) and D spines,
 *   every link (bandwidth, latency): route across leaves = 4 links (4 x latency);
 * - n_ps > 0, star: a second cluster "ps-0".."ps-(K-1)" marked <prop id="role" value="ps"/>,
 *   same links, joined to the workers' cluster by a FATPIPE link of 0 latency, so a push crosses
 *   the worker's link, then the PS's link (the incast bottleneck);
 * - n_ps > 0, fat-tree: the tree holds N + K hosts (factored as above) and its last K hosts
 *   gpu-N..gpu-(N+K-1) are the PS hosts (<prop id="ps_last" value="K"/>, see cluster.h);
 * - host speed = peak FP32 FLOP/s of the GPU class x efficiency, <prop id="gpu" value="v100"/>;
 * - n_nodes > 0: a node platform (multi-GPU servers, NICs, rails): see platform_gen_nodes.c and
 *   platforms/README.md;
 * - routed (star only, the form the ns-3 network model accepts): the same star written without
 *   a <cluster>: hosts gpu-i (and ps-k), one router "switch", one SPLITDUPLEX link per host, a
 *   one-link route from each host to the switch and an explicit two-link route between every
 *   pair of hosts (li.UP, lj.DOWN). LV08 and CM02 give the same times on it as on the cluster
 *   form; ns-3 builds one full-duplex point-to-point link per host from the one-link routes. At
 *   most PLATFORM_ROUTED_MAX_HOSTS hosts (the routes grow as the square of the hosts).
 */
#ifndef SS_SIM_PLATFORM_GEN_H
#define SS_SIM_PLATFORM_GEN_H

#include "common/run_config.h"
#include "sim/net/fabric.h"

#include <stdio.h>

typedef enum platform_topology {
    PLATFORM_TOPOLOGY_STAR = 0,    /* one switch (cluster with backbone) */
    PLATFORM_TOPOLOGY_FAT_TREE = 1 /* two-level non-blocking fat tree */
} platform_topology;

/* A GPU class: its index in sim/compute/gpu_table.c (every class of the table can be generated). */
typedef enum platform_gpu {
    PLATFORM_GPU_V100 = 0, /* peak FP32 15.7 TFLOP/s (SXM2) */
    PLATFORM_GPU_A100 = 1, /* peak FP32 19.5 TFLOP/s (SXM4, without TF32 tensor cores) */
    PLATFORM_GPU_H100 = 2  /* peak FP32 67 TFLOP/s (SXM5, without TF32 tensor cores) */
} platform_gpu;

typedef struct platform_gen_spec {
    int n_hosts;          /* worker hosts, 1..65536 */
    double bandwidth_Bps; /* per link, bytes per second (> 0) */
    double latency_s;     /* per link, seconds (>= 0) */
    platform_topology topology;
    platform_gpu gpu;
    double efficiency; /* fraction of peak FP32 the host speed stands for, (0, 1]; 1 = peak */
    int n_ps;          /* extra parameter-server hosts (role=ps), 0..1024 */

    /* Node platforms (n_nodes > 0; platform_gen_nodes.c): n_nodes servers of G GPUs each, the
     * GPUs of a server joined by intra-node links, R NICs per server (GPU g on NIC g * R / G)
     * whose links (bandwidth_Bps, latency_s, nic_fabric) meet above the servers in `topology`. */
    int n_nodes;                /* 0: a flat cluster of n_hosts hosts; else 1..8192 */
    int gpus_per_node;          /* G, 1..1024; 0: n_hosts / n_nodes (which must divide) */
    int nics_per_node;          /* R, 1..G */
    double intra_bandwidth_Bps; /* per GPU and direction, bytes per second (> 0) */
    double intra_latency_s;     /* per intra-node link (>= 0); a GPU-to-GPU route has two */
    sim_fabric intra_fabric;    /* SIM_FABRIC_NVLINK or SIM_FABRIC_PCIE */
    sim_fabric nic_fabric;      /* SIM_FABRIC_ETHERNET, _INFINIBAND or _ROCE */
    /* PCIe nodes: GPUs local g sit in groups of `pcie_switch` behind switch g / pcie_switch,
     * whose uplink to the CPU (intra_bandwidth_Bps per direction) every route between switches,
     * and every route to a NIC, crosses (NICs sit at the CPU); 0: no switch. p2p 0: the GPUs
     * cannot reach each other peer to peer (GeForce cards; NCCL's shared-memory transport), so
     * routes between GPUs of one switch cross its uplink too, through host memory. */
    int pcie_switch; /* 0..G */
    int p2p;         /* 1 (default) or 0; 0 needs pcie_switch */

    int routed; /* 1: the star as explicit routes (see above; the ns-3 form); 0: a <cluster> */
} platform_gen_spec;

/* Largest star (workers + PS hosts) the routed form is written for. */
#define PLATFORM_ROUTED_MAX_HOSTS 256

/* Named intra-node fabrics (--intra): per-GPU, per-direction bandwidth and per-link latency,
 * sources in platform_gen_nodes.c and platforms/README.md. */
typedef enum platform_intra {
    PLATFORM_INTRA_NVLINK3 = 0, /* A100 NVLink 3 through NVSwitch: 300 GB/s per direction */
    PLATFORM_INTRA_NVLINK4 = 1, /* H100 NVLink 4 through NVSwitch: 450 GB/s per direction */
    PLATFORM_INTRA_PCIE3 = 2,   /* PCIe 3.0 x16: 15.75 GB/s per direction */
    PLATFORM_INTRA_PCIE4 = 3    /* PCIe 4.0 x16: 31.5 GB/s per direction */
} platform_intra;

/* "nvlink3" | "nvlink4" | "pcie3" | "pcie4": sets the intra-node bandwidth, latency and fabric of
 * the spec; SS_EUSAGE naming `option` otherwise. */
int platform_apply_intra(const char *option, const char *text, platform_gen_spec *spec);
/* "ethernet" | "infiniband" | "roce": the fabric of the NIC links. */
int platform_parse_nic_fabric(const char *option, const char *text, sim_fabric *out);
/* G of a node spec: gpus_per_node, or n_hosts / n_nodes (SS_EUSAGE when it does not divide). */
int platform_spec_gpus_per_node(const platform_gen_spec *spec, int *g);
/* Every check of the node options (--nodes, --gpus-per-node, --nics-per-node, the intra-node
 * fabric, --pcie-switch, --p2p) that generating the platform makes: SS_EUSAGE naming the option. */
int platform_spec_validate_nodes(const platform_gen_spec *spec);
/* Writes the routed star (routed = 1) to `out`: called by platform_generate(). */
int platform_generate_routed(const platform_gen_spec *spec, FILE *out);
/* Writes a node platform (n_nodes > 0) to `out`: called by platform_generate(). */
int platform_generate_nodes(const platform_gen_spec *spec, FILE *out);

/* 16 v100 hosts, 25 Gbps, 10 us per link, star, efficiency 1, no PS; flat (n_nodes 0; the node
 * fields hold nvlink3, 1 NIC per node, ethernet). */
platform_gen_spec platform_gen_default(void);

/* "25Gbps", "100Mbps", "1.25GBps", "100MBps", "800kbps", "1e9bps", "3Bps" (bits with "bps",
 * bytes with "Bps"; prefixes k M G T, also Ki Mi Gi Ti); > 0 and finite. SS_EUSAGE naming
 * `option` and the valid forms otherwise. *Bps in bytes per second. */
int platform_parse_bandwidth(const char *option, const char *text, double *Bps);
/* "5us", "1.5ms", "0.001s", "100ns", "0s" (unit required); >= 0 and finite; SS_EUSAGE otherwise. */
int platform_parse_latency(const char *option, const char *text, double *seconds);
/* "star" | "fat-tree" (also "fattree", "fat_tree"). */
int platform_parse_topology(const char *option, const char *text, platform_topology *out);
/* "v100" | "a100" | "h100" (case-insensitive). */
int platform_parse_gpu(const char *option, const char *text, platform_gpu *out);

const char *platform_topology_name(platform_topology t);
const char *platform_gpu_name(platform_gpu g);
double platform_gpu_peak_flops(platform_gpu g); /* FP32 FLOP/s */

/* Writes a bandwidth (bytes/s; written in bits) or a latency (s) with a SimGrid unit ("25Gbps",
 * "5us") into buf. */
void platform_format_bandwidth(double Bps, char *buf, unsigned long buf_bytes);
void platform_format_latency(double seconds, char *buf, unsigned long buf_bytes);
/* Host speeds as the platforms write them: the largest unit giving a value >= 1 ("15.7Tf"). */
void platform_format_speed(double flops, char *buf, unsigned long buf_bytes);

/* SS_EUSAGE with a message naming the field when the spec is out of range. */
int platform_spec_validate(const platform_gen_spec *spec);
/* Validates, then writes the platform to `out`; SS_EIO if writing fails. */
int platform_generate(const platform_gen_spec *spec, FILE *out);
/* The same into the file `path`, atomically (common/afile.h). */
int platform_generate_file(const platform_gen_spec *spec, const char *path);

/* A generated platform that only this process's simulations read (a replay's, a fit's, a
 * benchmark's), in a file without a name: created in platform_temp_dir() with O_TMPFILE (or
 * unlinked as soon as it is open), and read by SimGrid through t->path, /proc/self/fd/N, also in
 * forked children (common/isolate.h), which inherit the descriptor. Nothing is left on disk
 * however the process ends, SIGKILL included. Where /proc is not mounted the file keeps a name
 * (TMPDIR/syncsim-platform-XXXXXX.xml) until platform_temp_close().
 *
 *     platform_temp t;
 *     if (platform_temp_generate(&spec, &t) != SS_OK) return ...;   // SS_EIO naming the directory
 *     sim_cluster_opts co = {.platform_path = t.path, ...};  ... sim_cluster_open(&co, &c) ...
 *     platform_temp_close(&t);   // once no simulation will read it any more
 */
typedef struct platform_temp {
    int fd;          /* the open file (-1: none) */
    int named;       /* no /proc: path is a name of its own, removed by platform_temp_close() */
    char path[1100]; /* what SimGrid reads */
} platform_temp;

int platform_temp_generate(const platform_gen_spec *spec, platform_temp *t);
/* Closes the file (and removes its name, if it has one); t may be closed already. */
void platform_temp_close(platform_temp *t);
/* $TMPDIR, or /tmp when it is unset or empty. */
const char *platform_temp_dir(void);

/* Link latency of a generated platform when --latency is "tier": the tier of the bandwidth
 * (platforms/README.md): <= 5 Gbps 25 us, <= 10 Gbps 15 us, <= 25 Gbps 10 us, <= 40 Gbps 5 us,
 * faster 1 us. */
double platform_tier_latency_s(double bandwidth_Bps);
/* The generated platform of a run (train, replay, compare, `syncsim platform`) from its options
 * --bandwidth, --latency, --topology, --gpu and --gpu-efficiency, for n_hosts workers and n_ps
 * servers, and with --nodes N > 0 a node platform from --gpus-per-node, --nics-per-node, --intra,
 * --intra-bandwidth, --intra-latency and --fabric; SS_EUSAGE naming a bad option. Under
 * --network-model ns-3 the star is written routed, and a fat tree or --nodes is SS_EUSAGE (ns-3
 * accepts neither form, platforms/README.md). */
int platform_spec_from_config(const run_config *cfg, int n_hosts, int n_ps,
                              platform_gen_spec *spec);

#endif
