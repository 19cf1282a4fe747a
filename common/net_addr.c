/*
 * net_addr.c - which addresses an outgoing request may reach without the
 * operator's leave (net_addr.h).
 */
#include "net_addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* 1 when IPv4 address a (host order) is not a public unicast address. */
static int net_addr4_private(uint32_t a)
{
    static const struct { uint32_t net, mask; } nets[] = {
        { 0x00000000, 0xff000000 }, /* 0/8: "this network" */
        { 0x0a000000, 0xff000000 }, /* 10/8 */
        { 0x64400000, 0xffc00000 }, /* 100.64/10: carrier-grade NAT */
        { 0x7f000000, 0xff000000 }, /* 127/8: loopback */
        { 0xa9fe0000, 0xffff0000 }, /* 169.254/16: link-local, cloud metadata */
        { 0xac100000, 0xfff00000 }, /* 172.16/12 */
        { 0xc0000000, 0xffffff00 }, /* 192.0.0/24: protocol assignments */
        { 0xc0a80000, 0xffff0000 }, /* 192.168/16 */
        { 0xc6120000, 0xfffe0000 }, /* 198.18/15: benchmarking */
        { 0xe0000000, 0xe0000000 }, /* 224/3: multicast, reserved, broadcast */
    };
    for (size_t i = 0; i < sizeof nets / sizeof nets[0]; i++)
        if ((a & nets[i].mask) == nets[i].net)
            return 1;
    return 0;
}

int net_addr_private(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return net_addr4_private(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
    if (sa->sa_family != AF_INET6)
        return 1;
    const unsigned char *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
    static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
    static const unsigned char nat64[12] = { 0, 0x64, 0xff, 0x9b };
    static const unsigned char zero[15] = { 0 };
    if (!memcmp(b, mapped, 12) || !memcmp(b, nat64, 12)) /* an IPv4 address inside */
        return net_addr4_private((uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 |
                                 (uint32_t)b[14] << 8 | b[15]);
    if (!memcmp(b, zero, 15) && b[15] <= 1) /* :: and ::1 */
        return 1;
    return (b[0] & 0xfe) == 0xfc ||                /* fc00::/7: unique local */
           (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) || /* fe80::/10: link-local */
           (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) || /* fec0::/10: site-local */
           b[0] == 0xff;                           /* ff00::/8: multicast */
}

void net_addr_text(const struct sockaddr *sa, char *buf, size_t n)
{
    const void *ip = sa->sa_family == AF_INET6
        ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr
        : (const void *)&((const struct sockaddr_in *)sa)->sin_addr;
    if ((sa->sa_family != AF_INET && sa->sa_family != AF_INET6) ||
        !inet_ntop(sa->sa_family, ip, buf, (socklen_t)n))
        snprintf(buf, n, "?");
}
