/*
 * net_addr.h - the address rule that every outgoing HTTP request of vrseg
 * follows (webhooks, storage over HTTP): loopback, private, link-local
 * (169.254.169.254, cloud metadata), CGNAT, multicast and unspecified
 * addresses are not a public unicast address, and are reached only when
 * the operator allows it (--notify-allow-private, --storage-allow-private),
 * so a URL from a job spec cannot reach the fleet's own network.
 */
#ifndef VR_NET_ADDR_H
#define VR_NET_ADDR_H

#include <sys/socket.h>

/* 1 when sa is not a public unicast address (see above); 1 for a family
 * other than IPv4 and IPv6 too. */
int net_addr_private(const struct sockaddr *sa);

/* The address of sa as text into buf ("?" when it cannot be said). */
void net_addr_text(const struct sockaddr *sa, char *buf, size_t n);

#endif
