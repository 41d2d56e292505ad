/* Which platforms SimGrid's ns-3 binding can load (see cluster.h, sim_platform_check_ns3()).
 *
 * SimGrid 3.32 hands ns-3 only the routes made of ONE link (a point-to-point link between the
 * route's two ends) and lets ns-3 route packets itself over them; longer routes are dropped. A
 * <cluster> becomes a CSMA bus whose rate is the backbone's (without a backbone the set-up
 * divides by zero: SIGFPE), a host on no one-link route aborts the run at its first
 * communication ("unknown to ns-3"), and routes between zones cross gateways ns-3 never sees.
 * So the accepted form is narrow and checked here, before SimGrid reads the file. */
#include <stdio.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "common/status.h"
#include "sim/net/cluster.h"

#define NS3_ACCEPTS                                                                                \
    "ns-3 accepts one <zone> (routing Full, Floyd or Dijkstra) of <host>s, <router>s and "         \
    "<link>s (SHARED or SPLITDUPLEX) where every host is an end of a <route> of exactly one "      \
    "<link_ctn>; `syncsim platform --network-model ns-3` writes such a star"

typedef struct ns3_ctx {
    const char *path;
} ns3_ctx;

static int ns3_refuse(const ns3_ctx *c, const xmlNode *n, const char *why) {
    return ss_error_set(SS_EUSAGE,
                        "platform %s:%ld: --network-model ns-3 cannot run this platform: %s. %s",
                        c->path, (long)xmlGetLineNo((xmlNode *)n), why, NS3_ACCEPTS);
}

static int elem_is(const xmlNode *n, const char *name) {
    return n->type == XML_ELEMENT_NODE && !strcmp((const char *)n->name, name);
}

static int count_children(const xmlNode *n, const char *name) {
    int k = 0;
    for (const xmlNode *ch = n->children; ch; ch = ch->next)
        k += elem_is(ch, name);
    return k;
}

/* The elements of the one zone: refuses what ns-3 cannot build, collects one-link routes. */
static int ns3_check_zone(ns3_ctx *c, const xmlNode *zone) {
    xmlChar *routing = xmlGetProp((xmlNode *)zone, (const xmlChar *)"routing");
    int ok = routing && (!strcmp((char *)routing, "Full") || !strcmp((char *)routing, "Floyd") ||
                         !strcmp((char *)routing, "Dijkstra"));
    xmlFree(routing);
    if (!ok) return ns3_refuse(c, zone, "the zone's routing is not Full, Floyd or Dijkstra");
    for (const xmlNode *n = zone->children; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE || elem_is(n, "host") || elem_is(n, "router") ||
            elem_is(n, "prop"))
            continue;
        if (elem_is(n, "cluster") || elem_is(n, "cabinet"))
            return ns3_refuse(c, n,
                              "a <cluster> becomes one shared CSMA bus in ns-3 (and crashes it "
                              "without a backbone)");
        if (elem_is(n, "zone") || elem_is(n, "AS") || elem_is(n, "zoneRoute") ||
            elem_is(n, "ASroute") || elem_is(n, "bypassRoute") || elem_is(n, "bypassZoneRoute"))
            return ns3_refuse(c, n, "nested zones and routes between zones are not seen by ns-3");
        if (elem_is(n, "link")) {
            xmlChar *sp = xmlGetProp((xmlNode *)n, (const xmlChar *)"sharing_policy");
            int fat = sp && !strcmp((char *)sp, "FATPIPE");
            xmlFree(sp);
            if (fat) return ns3_refuse(c, n, "ns-3 has no FATPIPE link");
            continue;
        }
        if (elem_is(n, "route")) continue;
        return ns3_refuse(c, n, "this element has no ns-3 counterpart");
    }
    return SS_OK;
}

/* 1 when `host` is the src or dst of a route of one link in `zone`. */
static int on_one_link_route(const xmlNode *zone, const char *host) {
    for (const xmlNode *r = zone->children; r; r = r->next) {
        if (!elem_is(r, "route") || count_children(r, "link_ctn") != 1) continue;
        xmlChar *src = xmlGetProp((xmlNode *)r, (const xmlChar *)"src");
        xmlChar *dst = xmlGetProp((xmlNode *)r, (const xmlChar *)"dst");
        int hit = (src && !strcmp((char *)src, host)) || (dst && !strcmp((char *)dst, host));
        xmlFree(src);
        xmlFree(dst);
        if (hit) return 1;
    }
    return 0;
}

static int ns3_check_hosts(ns3_ctx *c, const xmlNode *zone) {
    for (const xmlNode *n = zone->children; n; n = n->next) {
        if (!elem_is(n, "host")) continue;
        xmlChar *id = xmlGetProp((xmlNode *)n, (const xmlChar *)"id");
        int found = id && on_one_link_route(zone, (const char *)id);
        char why[512];
        snprintf(why, sizeof why, "host '%s' is on no one-link <route> (ns-3 would not know it)",
                 id ? (const char *)id : "");
        xmlFree(id);
        if (!found) return ns3_refuse(c, n, why);
    }
    return SS_OK;
}

int sim_platform_check_ns3(const char *path) {
    xmlDoc *doc = xmlReadFile(
        path, NULL, XML_PARSE_NONET | XML_PARSE_RECOVER | XML_PARSE_NOWARNING | XML_PARSE_NOERROR);
    if (!doc) return ss_error_set(SS_EINPUT, "platform %s: cannot parse", path);
    ns3_ctx c = {.path = path};
    const xmlNode *root = xmlDocGetRootElement(doc), *zone = NULL;
    int st = SS_OK, zones = 0;
    for (const xmlNode *n = root ? root->children : NULL; n && !st; n = n->next) {
        if (elem_is(n, "zone") || elem_is(n, "AS")) {
            zone = n;
            zones++;
        } else if (n->type == XML_ELEMENT_NODE && !elem_is(n, "prop")) {
            st = ns3_refuse(&c, n, "only one <zone> may sit under <platform>");
        }
    }
    if (!st && zones != 1) st = ns3_refuse(&c, root, "only one <zone> may sit under <platform>");
    if (!st) st = ns3_check_zone(&c, zone);
    if (!st) st = ns3_check_hosts(&c, zone);
    xmlFreeDoc(doc);
    return st;
}
