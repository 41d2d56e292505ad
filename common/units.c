/* Value-with-unit parsing (see units.h): the unit tables SimGrid's platform parser accepts. */
#include "common/units.h"
#include "common/number.h"
#include "common/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct unit_row {
    const char *name;
    double scale; /* to SI base units */
} unit_row;

static const unit_row bandwidth_units[] = {{"bps", 0.125},
                                           {"kbps", 125.0},
                                           {"Kbps", 125.0},
                                           {"Mbps", 125e3},
                                           {"Gbps", 125e6},
                                           {"Tbps", 125e9},
                                           {"Kibps", 128.0},
                                           {"Mibps", 131072.0},
                                           {"Gibps", 134217728.0},
                                           {"Tibps", 137438953472.0},
                                           {"Bps", 1.0},
                                           {"kBps", 1e3},
                                           {"KBps", 1e3},
                                           {"MBps", 1e6},
                                           {"GBps", 1e9},
                                           {"TBps", 1e12},
                                           {"KiBps", 1024.0},
                                           {"MiBps", 1048576.0},
                                           {"GiBps", 1073741824.0},
                                           {"TiBps", 1099511627776.0},
                                           {NULL, 0}};

static const unit_row time_units[] = {{"w", 604800.0}, {"d", 86400.0}, {"h", 3600.0}, {"m", 60.0},
                                      {"s", 1.0},      {"ms", 1e-3},   {"us", 1e-6},  {"ns", 1e-9},
                                      {"ps", 1e-12},   {NULL, 0}};

static const unit_row speed_units[] = {
    {"f", 1.0},      {"kf", 1e3},     {"Mf", 1e6},      {"Gf", 1e9},      {"Tf", 1e12},
    {"Pf", 1e15},    {"Ef", 1e18},    {"Zf", 1e21},     {"flops", 1.0},   {"kflops", 1e3},
    {"Mflops", 1e6}, {"Gflops", 1e9}, {"Tflops", 1e12}, {"Pflops", 1e15}, {NULL, 0}};

static int parse_with(const char *text, const unit_row *units, double *out) {
    const char *end;
    double v;
    if (number_parse_prefix(text, &v, &end) != 0) return -1;
    for (const unit_row *u = units; u->name; u++) {
        if (strcmp(end, u->name) == 0) {
            *out = v * u->scale;
            return 0;
        }
    }
    return -1;
}

int units_parse_bandwidth(const char *text, double *bytes_per_s) {
    return parse_with(text, bandwidth_units, bytes_per_s);
}

int units_parse_time(const char *text, double *seconds) {
    return parse_with(text, time_units, seconds);
}

int units_parse_speed(const char *text, double *flops) {
    return parse_with(text, speed_units, flops);
}

int units_parse_option_time(const char *option, const char *what, const char *text,
                            double *seconds) {
    double s = 0;
    if (!text || units_parse_time(text, &s) != 0)
        return ss_error_set(SS_EUSAGE,
                            "%s: cannot read %s '%s' (write a number and a unit: \"5us\", "
                            "\"1.5ms\", \"100ns\", \"0s\")",
                            option, what, text ? text : "");
    if (!(s >= 0) || !isfinite(s))
        return ss_error_set(SS_EUSAGE, "%s: %s '%s' must be >= 0", option, what, text);
    *seconds = s;
    return SS_OK;
}
