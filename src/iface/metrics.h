/* SPDX-License-Identifier: MIT */
/* iface/metrics.h - what the rest of iface/ asks of the metrics server (metrics.c). */
#ifndef MCG_IFACE_METRICS_H
#define MCG_IFACE_METRICS_H

#include <stddef.h>

/**
 * mcg_metrics_address - "ADDR:PORT" the metrics server listens on (the
 * port it got, for a port 0 request), at most @len bytes with the NUL.
 * Return: 0 or -ENOENT (not serving).
 */
int mcg_metrics_address(char *buf, size_t len);

#endif /* MCG_IFACE_METRICS_H */
