/* Node platforms of the generator: multi-GPU servers with intra-node links and NICs (rails).
 *
 * What it writes (platforms/README.md shows a sketch):
 * - zone "world" (routing Full) holds one zone "node<k>" (routing Full) per server, and with
 *   parameter servers a zone "servers";
 * - node<k> holds the GPU hosts node<k>-gpu<g> (props gpu, node, local_rank, nic), one intra link
 *   per GPU node<k>-gpu<g>-<nvlink|pcie> (SPLITDUPLEX: per-direction bandwidth, the GPU's port on
 *   the NVSwitch or its PCIe x16 slot), one link per NIC node<k>-nic<r> (SPLITDUPLEX, the NIC's
 *   cable to the switch) and a router node<k>-port, the gateway of inter-node routes;
 * - with pcie_switch K (PCIe nodes): one uplink node<k>-sw<s>-pcie per switch of K GPUs (GPU g
 *   behind switch g / K; SPLITDUPLEX, the intra bandwidth, 0 latency), which routes between
 *   switches, all routes between GPUs without p2p, and routes to the NICs cross after the GPU's
 *   own link (sw.UP outbound, sw.DOWN inbound);
 * - routes inside a node: gpu<a> -> gpu<b> = intra<a>.UP, intra<b>.DOWN (never a NIC);
 *   gpu<g> -> port = [intra<g>.UP on PCIe nodes, where the GPU reaches its NIC through its PCIe
 *   slot] nic<g*R/G>.UP. NVLink nodes reach the NIC through a PCIe switch that is not modelled:
 *   PCIe 4.0/5.0 x16 (31.5/63 GB/s) is faster than one 200/400 Gb/s NIC (25/50 GB/s);
 * - above the nodes (zoneRoutes port -> port): star = one non-blocking switch for every rail
 *   (a FATPIPE link "switch" of 0 latency: route = nic.UP, switch, nic'.DOWN); fat-tree = leaf
 * switches of D nodes and D spines, leaf to spine links of R x bandwidth (non-blocking), route
 * across leaves through spine (k + k') mod D: nic.UP, leaf-spine.UP, leaf'-spine.DOWN, nic'.DOWN
 * (inside a leaf: nic.UP, leaf<l> (FATPIPE, 0 latency), nic'.DOWN). All NICs of a node sit on the
 * same leaf: SimGrid picks one gateway per pair of zones, so the middle of a route cannot depend on
 * the rail without listing every GPU pair; on a non-blocking fabric separate rail switches would
 * only change the hop count of cross-rail routes.
 */
#include "sim/platform/platform_gen.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/status.h"

/* Intra-node presets, per GPU and per direction.
 * - nvlink3: NVIDIA A100 datasheet, "NVLink: 600 GB/s" (12 NVLink 3 links x 25 GB/s per
 *   direction, bidirectional total) -> 300 GB/s per direction through NVSwitch;
 * - nvlink4: NVIDIA H100 SXM datasheet, "NVLink: 900 GB/s" (18 NVLink 4 links) -> 450 GB/s;
 * - pcie3: PCI Express 3.0, 8 GT/s x 16 lanes, 128b/130b encoding = 15.75 GB/s per direction;
 * - pcie4: PCI Express 4.0, 16 GT/s x 16 lanes, 128b/130b = 31.5 GB/s per direction.
 * Latency per link is half of the per-hop latency NCCL's tuning model assumes (NVIDIA/nccl,
 * src/graph/tuning.cc, hwLat, ring LL: NVLink 0.6 us, PCI 1.0 us), since a GPU-to-GPU route
 * crosses two links. */
static const struct {
    const char *name;
    double bytes_per_s;
    double link_latency_s;
    sim_fabric fabric;
} intra_presets[] = {{"nvlink3", 300e9, 0.3e-6, SIM_FABRIC_NVLINK},
                     {"nvlink4", 450e9, 0.3e-6, SIM_FABRIC_NVLINK},
                     {"pcie3", 15.75e9, 0.5e-6, SIM_FABRIC_PCIE},
                     {"pcie4", 31.5e9, 0.5e-6, SIM_FABRIC_PCIE}};
#define N_INTRA_PRESETS (int)(sizeof intra_presets / sizeof intra_presets[0])

int platform_apply_intra(const char *option, const char *text, platform_gen_spec *spec) {
    for (int i = 0; i < N_INTRA_PRESETS; i++) {
        if (text && strcasecmp(text, intra_presets[i].name) == 0) {
            spec->intra_bandwidth_Bps = intra_presets[i].bytes_per_s;
            spec->intra_latency_s = intra_presets[i].link_latency_s;
            spec->intra_fabric = intra_presets[i].fabric;
            return SS_OK;
        }
    }
    return ss_error_set(
        SS_EUSAGE, "%s: unknown intra-node fabric '%s' (valid: nvlink3, nvlink4, pcie3, pcie4)",
        option, text ? text : "");
}

int platform_parse_nic_fabric(const char *option, const char *text, sim_fabric *out) {
    sim_fabric f;
    if (sim_fabric_parse(text, &f) != 0 || f == SIM_FABRIC_NVLINK || f == SIM_FABRIC_PCIE)
        return ss_error_set(SS_EUSAGE,
                            "%s: unknown NIC fabric '%s' (valid: ethernet, infiniband, roce)",
                            option, text ? text : "");
    *out = f;
    return SS_OK;
}

int platform_spec_gpus_per_node(const platform_gen_spec *s, int *g) {
    if (s->n_nodes < 1 || s->n_nodes > 8192)
        return ss_error_set(SS_EUSAGE, "--nodes: %d, need 1 to 8192 (0: a flat cluster)",
                            s->n_nodes);
    if (s->gpus_per_node == 0 && s->n_hosts % s->n_nodes != 0)
        return ss_error_set(SS_EUSAGE,
                            "--nodes %d: %d GPUs (the workers, or --hosts) do not divide into %d "
                            "nodes of equal size; give a multiple of %d or --gpus-per-node",
                            s->n_nodes, s->n_hosts, s->n_nodes, s->n_nodes);
    *g = s->gpus_per_node ? s->gpus_per_node : s->n_hosts / s->n_nodes;
    if (*g < 1 || *g > 1024)
        return ss_error_set(SS_EUSAGE, "--gpus-per-node: %d, need 1 to 1024", *g);
    if ((long)*g * s->n_nodes > 65536)
        return ss_error_set(SS_EUSAGE, "--nodes %d x --gpus-per-node %d: more than 65536 GPUs",
                            s->n_nodes, *g);
    return SS_OK;
}

/* The node-specific part of platform_spec_validate(). */
static int validate_nodes(const platform_gen_spec *s, int *g) {
    int st = platform_spec_gpus_per_node(s, g);
    if (st) return st;
    if (s->nics_per_node < 1 || s->nics_per_node > *g)
        return ss_error_set(SS_EUSAGE,
                            "--nics-per-node: %d, need 1 to the GPUs per node (%d): GPU g sends "
                            "through NIC g * R / G",
                            s->nics_per_node, *g);
    if (!(s->intra_bandwidth_Bps > 0) || !isfinite(s->intra_bandwidth_Bps))
        return ss_error_set(SS_EUSAGE, "--intra-bandwidth: %g bps, need > 0",
                            8 * s->intra_bandwidth_Bps);
    if (!(s->intra_latency_s >= 0) || !isfinite(s->intra_latency_s))
        return ss_error_set(SS_EUSAGE, "--intra-latency: %g s, need >= 0", s->intra_latency_s);
    if (s->intra_fabric != SIM_FABRIC_NVLINK && s->intra_fabric != SIM_FABRIC_PCIE)
        return ss_error_set(SS_EUSAGE, "intra-node fabric: %s, need nvlink or pcie",
                            sim_fabric_name(s->intra_fabric));
    if (s->pcie_switch &&
        (s->pcie_switch < 0 || s->pcie_switch > *g || s->intra_fabric != SIM_FABRIC_PCIE))
        return ss_error_set(SS_EUSAGE,
                            "--pcie-switch: %d GPUs per switch, need 0 (none) or 1 to the GPUs per "
                            "node (%d), on PCIe nodes (--intra pcie3 or pcie4)",
                            s->pcie_switch, *g);
    if (!s->p2p && !s->pcie_switch)
        return ss_error_set(SS_EUSAGE, "--p2p off: needs --pcie-switch K (without switches every "
                                       "GPU-to-GPU route already crosses both GPUs' own links)");
    if (s->nic_fabric != SIM_FABRIC_ETHERNET && s->nic_fabric != SIM_FABRIC_INFINIBAND &&
        s->nic_fabric != SIM_FABRIC_ROCE)
        return ss_error_set(SS_EUSAGE, "--fabric: %s, need ethernet, infiniband or roce",
                            sim_fabric_name(s->nic_fabric));
    return SS_OK;
}

int platform_spec_validate_nodes(const platform_gen_spec *s) {
    int g;
    return validate_nodes(s, &g);
}

/* Hosts per leaf switch: the smallest divisor of n that is >= sqrt(n) (as the flat fat tree). */
static int leaf_nodes(int n) {
    int d = (int)ceil(sqrt((double)n));
    while (n % d != 0)
        d++;
    return d;
}

typedef struct node_text {
    char speed[64], bw[64], lat[64], intra_bw[64], intra_lat[64], uplink_bw[64];
    const char *gpu, *intra, *nic;
    int g, r, leaf;
} node_text;

/* The comment at the top: the node structure and the worker -> GPU mapping. */
static void write_sketch(const platform_gen_spec *s, const node_text *t, FILE *out) {
    int n = s->n_nodes, g = t->g, r = t->r;
    fprintf(out,
            "  <!-- Generated by `syncsim platform`: %d node%s x %d %s GPUs (%s each = peak FP32 "
            "x %g),\n"
            "       %d NIC%s per node (%s, %s, %s latency), %s above the nodes.\n\n",
            n, n > 1 ? "s" : "", g, t->gpu, t->speed, s->efficiency, r, r > 1 ? "s" : "", t->nic,
            t->bw, t->lat, platform_topology_name(s->topology));
    fprintf(out,
            "       node0: gpu0  gpu1  ...  gpu%-3d   workers 0..%d (worker w = node x %d + "
            "local_rank)\n"
            "               |     |          |       %s link per GPU: %s per direction, %s\n"
            "             [ %-26s ]   GPU-to-GPU route: 2 %s links%s, never a NIC\n"
            "               gpu g -> nic (g x %d / %d)\n"
            "             nic0 .. nic%-3d              %s, %s per NIC and direction, %s\n",
            g - 1, g - 1, g, t->intra, t->intra_bw, t->intra_lat,
            !strcmp(t->intra, "nvlink") ? "NVSwitch" : "PCIe root complex", t->intra,
            s->pcie_switch ? " (+ uplinks, below)" : "", r, g, r - 1, t->nic, t->bw, t->lat);
    if (s->topology == PLATFORM_TOPOLOGY_STAR)
        fprintf(out, "               |   ...   |\n"
                     "       ====== switch (non-blocking, every rail of every node) ======\n");
    else
        fprintf(out,
                "               |   ...   |\n"
                "       leaf switches of %d nodes (all NICs of a node on its leaf), %d spines,\n"
                "       leaf-spine links of %s (non-blocking); across leaves via spine\n"
                "       (k + k') mod %d\n",
                t->leaf, t->leaf, t->uplink_bw, t->leaf);
    if (n > 1)
        fprintf(out, "       node1%s%.0d: the same; node k holds workers %d k .. %d k + %d.\n",
                n > 2 ? " .. node" : "", n > 2 ? n - 1 : 0, g, g, g - 1);
    if (s->pcie_switch)
        fprintf(out,
                "       PCIe switches of %d GPUs (gpu g behind sw g / %d), each with an uplink\n"
                "       node<k>-sw<s>-pcie of %s per direction to the CPU, where the NICs sit:\n"
                "       GPU-to-GPU routes %s cross both switches' uplinks\n"
                "       (gpu.UP, sw.UP, sw'.DOWN, gpu'.DOWN)%s.\n",
                s->pcie_switch, s->pcie_switch, t->intra_bw,
                s->p2p ? "between switches" : "all (no peer to peer: through host memory)",
                s->p2p ? "; inside a switch gpu.UP, gpu'.DOWN" : "");
    fprintf(out, "       Inter-node route: %s%snic.UP, %snic'.DOWN%s%s.\n",
            s->intra_fabric == SIM_FABRIC_PCIE ? "pcie.UP, " : "", s->pcie_switch ? "sw.UP, " : "",
            s->topology == PLATFORM_TOPOLOGY_STAR
                ? "switch, "
                : "leaf<l> (same leaf) or leaf-spine.UP, leaf'-spine.DOWN, ",
            s->pcie_switch ? ", sw'.DOWN" : "",
            s->intra_fabric == SIM_FABRIC_PCIE ? ", pcie'.DOWN" : "");
    if (s->n_ps)
        fprintf(
            out,
            "\n       Parameter servers ps-0 .. ps-%d (prop role=ps) in zone \"servers\", each\n"
            "       with its own %s link to the switch.\n",
            s->n_ps - 1, t->bw);
    fprintf(out, "  -->\n");
}

static void write_link(FILE *out, const char *id, const char *bw, const char *lat,
                       const char *fabric) {
    fprintf(
        out,
        "      <link id=\"%s\" bandwidth=\"%s\" latency=\"%s\" sharing_policy=\"SPLITDUPLEX\">\n"
        "        <prop id=\"fabric\" value=\"%s\"/>\n"
        "      </link>\n",
        id, bw, lat, fabric);
}

/* Zone node<k>: its GPU hosts, links, gateway and routes. */
static void write_node(const platform_gen_spec *s, const node_text *t, int k, FILE *out) {
    int g = t->g, r = t->r, pcie = s->intra_fabric == SIM_FABRIC_PCIE, sw = s->pcie_switch;
    char id[96];
    fprintf(out, "    <zone id=\"node%d\" routing=\"Full\">\n", k);
    for (int i = 0; i < g; i++)
        fprintf(out,
                "      <host id=\"node%d-gpu%d\" speed=\"%s\">\n"
                "        <prop id=\"gpu\" value=\"%s\"/>\n"
                "        <prop id=\"node\" value=\"%d\"/>\n"
                "        <prop id=\"local_rank\" value=\"%d\"/>\n"
                "        <prop id=\"nic\" value=\"%d\"/>\n"
                "      </host>\n",
                k, i, t->speed, t->gpu, k, i, (int)((long)i * r / g));
    fprintf(out, "      <router id=\"node%d-port\"/>\n", k);
    for (int i = 0; i < g; i++) {
        snprintf(id, sizeof id, "node%d-gpu%d-%s", k, i, t->intra);
        write_link(out, id, t->intra_bw, t->intra_lat, t->intra);
    }
    for (int i = 0; i < r; i++) {
        snprintf(id, sizeof id, "node%d-nic%d", k, i);
        write_link(out, id, t->bw, t->lat, t->nic);
    }
    for (int w = 0; sw && w < (g + sw - 1) / sw; w++) { /* the switches' uplinks, no latency */
        snprintf(id, sizeof id, "node%d-sw%d-pcie", k, w);
        write_link(out, id, t->intra_bw, "0us", t->intra);
    }
    for (int a = 0; a < g; a++)
        for (int b = a + 1; b < g; b++) {
            fprintf(out,
                    "      <route src=\"node%d-gpu%d\" dst=\"node%d-gpu%d\"><link_ctn "
                    "id=\"node%d-gpu%d-%s\" direction=\"UP\"/>",
                    k, a, k, b, k, a, t->intra);
            if (sw && (!s->p2p || a / sw != b / sw))
                fprintf(out,
                        "<link_ctn id=\"node%d-sw%d-pcie\" direction=\"UP\"/><link_ctn "
                        "id=\"node%d-sw%d-pcie\" direction=\"DOWN\"/>",
                        k, a / sw, k, b / sw);
            fprintf(out, "<link_ctn id=\"node%d-gpu%d-%s\" direction=\"DOWN\"/></route>\n", k, b,
                    t->intra);
        }
    for (int i = 0; i < g; i++) {
        fprintf(out, "      <route src=\"node%d-gpu%d\" dst=\"node%d-port\">", k, i, k);
        if (pcie) fprintf(out, "<link_ctn id=\"node%d-gpu%d-pcie\" direction=\"UP\"/>", k, i);
        if (sw) fprintf(out, "<link_ctn id=\"node%d-sw%d-pcie\" direction=\"UP\"/>", k, i / sw);
        fprintf(out, "<link_ctn id=\"node%d-nic%d\" direction=\"UP\"/></route>\n", k,
                (int)((long)i * r / g));
    }
    fprintf(out, "    </zone>\n");
}

/* Zone "servers": PS hosts, each with its own NIC link to the switch. */
static void write_servers(const platform_gen_spec *s, const node_text *t, FILE *out) {
    char id[64];
    fprintf(out, "    <zone id=\"servers\" routing=\"Full\">\n");
    for (int i = 0; i < s->n_ps; i++)
        fprintf(out,
                "      <host id=\"ps-%d\" speed=\"%s\">\n"
                "        <prop id=\"gpu\" value=\"%s\"/>\n"
                "        <prop id=\"role\" value=\"ps\"/>\n"
                "      </host>\n",
                i, t->speed, t->gpu);
    fprintf(out, "      <router id=\"servers-port\"/>\n");
    for (int i = 0; i < s->n_ps; i++) {
        snprintf(id, sizeof id, "ps-%d-nic", i);
        write_link(out, id, t->bw, t->lat, t->nic);
    }
    for (int i = 0; i < s->n_ps; i++)
        fprintf(out,
                "      <route src=\"ps-%d\" dst=\"servers-port\"><link_ctn id=\"ps-%d-nic\" "
                "direction=\"UP\"/></route>\n",
                i, i);
    fprintf(out, "    </zone>\n");
}

/* A non-blocking switch as a FATPIPE link of 0 latency (SimGrid forbids empty routes): each
 * flow may use up to `bw`, flows do not share it. */
static void write_switch(FILE *out, const char *id, const char *bw, const char *fabric) {
    fprintf(out,
            "    <link id=\"%s\" bandwidth=\"%s\" latency=\"0us\" sharing_policy=\"FATPIPE\">\n"
            "      <prop id=\"fabric\" value=\"%s\"/>\n"
            "    </link>\n",
            id, bw, fabric);
}

/* The zoneRoutes above the nodes; the servers hang off the star's switch, or off a switch of
 * their own joined to every leaf of the fat tree. */
static void write_fabric(const platform_gen_spec *s, const node_text *t, FILE *out) {
    int n = s->n_nodes, fat = s->topology == PLATFORM_TOPOLOGY_FAT_TREE, d = t->leaf;
    char id[64];
    write_switch(out, "switch", t->uplink_bw, t->nic);
    for (int l = 0; fat && l < n / d; l++) {
        snprintf(id, sizeof id, "leaf%d", l);
        write_switch(out, id, t->uplink_bw, t->nic);
        for (int sp = 0; sp < d; sp++) {
            snprintf(id, sizeof id, "leaf%d-spine%d", l, sp);
            fprintf(out, "  ");
            write_link(out, id, t->uplink_bw, t->lat, t->nic);
        }
    }
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            fprintf(out,
                    "    <zoneRoute src=\"node%d\" dst=\"node%d\" gw_src=\"node%d-port\" "
                    "gw_dst=\"node%d-port\">",
                    a, b, a, b);
            if (!fat)
                fprintf(out, "<link_ctn id=\"switch\"/>");
            else if (a / d == b / d)
                fprintf(out, "<link_ctn id=\"leaf%d\"/>", a / d);
            else
                fprintf(out,
                        "<link_ctn id=\"leaf%d-spine%d\" direction=\"UP\"/><link_ctn "
                        "id=\"leaf%d-spine%d\" direction=\"DOWN\"/>",
                        a / d, (a + b) % d, b / d, (a + b) % d);
            fprintf(out, "</zoneRoute>\n");
        }
    for (int a = 0; s->n_ps && a < n; a++)
        fprintf(out,
                "    <zoneRoute src=\"node%d\" dst=\"servers\" gw_src=\"node%d-port\" "
                "gw_dst=\"servers-port\"><link_ctn id=\"switch\"/></zoneRoute>\n",
                a, a);
}

int platform_generate_nodes(const platform_gen_spec *s, FILE *out) {
    node_text t = {0};
    int st = validate_nodes(s, &t.g);
    if (st) return st;
    t.r = s->nics_per_node;
    t.leaf = leaf_nodes(s->n_nodes);
    t.gpu = platform_gpu_name(s->gpu);
    t.intra = sim_fabric_name(s->intra_fabric);
    t.nic = sim_fabric_name(s->nic_fabric);
    platform_format_speed(platform_gpu_peak_flops(s->gpu) * s->efficiency, t.speed, sizeof t.speed);
    platform_format_bandwidth(s->bandwidth_Bps, t.bw, sizeof t.bw);
    platform_format_latency(s->latency_s, t.lat, sizeof t.lat);
    platform_format_bandwidth(s->intra_bandwidth_Bps, t.intra_bw, sizeof t.intra_bw);
    platform_format_latency(s->intra_latency_s, t.intra_lat, sizeof t.intra_lat);
    platform_format_bandwidth(s->bandwidth_Bps * t.r, t.uplink_bw, sizeof t.uplink_bw);
    fprintf(out, "<?xml version='1.0'?>\n"
                 "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                 "<platform version=\"4.1\">\n");
    write_sketch(s, &t, out);
    fprintf(out, "  <zone id=\"world\" routing=\"Full\">\n");
    for (int k = 0; k < s->n_nodes; k++)
        write_node(s, &t, k, out);
    if (s->n_ps) write_servers(s, &t, out);
    write_fabric(s, &t, out);
    fprintf(out, "  </zone>\n</platform>\n");
    if (fflush(out) != 0 || ferror(out))
        return ss_error_set(SS_EIO, "platform: writing the platform failed");
    return SS_OK;
}
