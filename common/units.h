/* Internal: SimGrid-style values with units ("25Gbps", "5us", "15.7Tf"), shared by the platform
 * checker and the generator. Each returns 0 and the value in SI base units (bytes/s, s, flop/s),
 * or -1 when the text is not a decimal number (common/number.h: no hexadecimal, no inf or nan)
 * followed by a known unit. */
#ifndef SS_SIM_UNITS_H
#define SS_SIM_UNITS_H

int units_parse_bandwidth(const char *text, double *bytes_per_s);
int units_parse_time(const char *text, double *seconds);
int units_parse_speed(const char *text, double *flops);
/* A time given to `option` (a latency, a deadline: `what` names it in messages): SS_OK and
 * *seconds, or SS_EUSAGE naming the option and the valid forms, also for a negative or
 * non-finite time. */
int units_parse_option_time(const char *option, const char *what, const char *text,
                            double *seconds);

#endif
