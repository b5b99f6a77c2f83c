/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the tcp core's sockets: the one under a connected endpoint,
 * and what kind a core wait object's fd is.
 *
 * A read-flush commit posts two operations back to back: the data write
 * and the 8-byte read behind it.  The tcp core sends each in the call that
 * posts it, so without help they leave as two TCP segments: the target's
 * progress handles them in turn and the initiator pays a second send.
 * (libfabric 1.17's tcp core ignores FI_MORE).  Corking the endpoint's
 * socket while both are posted makes them one segment: read-flush 64 B
 * over 127.0.0.1, busy target, 1.56-1.62 -> 1.31-1.38 read round trips in
 * alternating runs.  libfabric gives no handle on the socket, so it is
 * found once, as the descriptor whose local and peer addresses are the
 * endpoint's (fi_getname, fi_getpeer).
 */
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "pmv.h"

/* Whether descriptor fd is a socket with addresses name and peer. */
static bool pmv_sock_matches(int fd, const struct sockaddr_storage *name,
			     socklen_t name_len,
			     const struct sockaddr_storage *peer,
			     socklen_t peer_len)
{
	struct sockaddr_storage a;
	socklen_t len = sizeof(a);

	if (getsockname(fd, (struct sockaddr *) &a, &len) || len != name_len ||
	    memcmp(&a, name, len))
		return false;
	len = sizeof(a);
	return !getpeername(fd, (struct sockaddr *) &a, &len) &&
	       len == peer_len && !memcmp(&a, peer, len);
}

int pmv_sock_find(struct fid_ep *core)
{
	struct sockaddr_storage name, peer;
	size_t name_len = sizeof(name), peer_len = sizeof(peer);
	struct dirent *d;
	DIR *dir;
	int fd = -1;

	if (fi_getname(&core->fid, &name, &name_len) ||
	    fi_getpeer(core, &peer, &peer_len) ||
	    name_len > sizeof(name) || peer_len > sizeof(peer))
		return -1;
	dir = opendir("/proc/self/fd");
	if (!dir)
		return -1;
	while (fd < 0 && (d = readdir(dir))) {
		int cand = atoi(d->d_name);

		if (d->d_name[0] != '.' && cand != dirfd(dir) &&
		    pmv_sock_matches(cand, &name, (socklen_t) name_len, &peer,
				     (socklen_t) peer_len))
			fd = cand;
	}
	closedir(dir);
	return fd;
}

void pmv_sock_cork(int fd, bool on)
{
	int v = on;

	(void) setsockopt(fd, IPPROTO_TCP, TCP_CORK, &v, sizeof(v));
}

int pmv_sock_family(int fd)
{
	int family = -1;
	socklen_t len = sizeof(family);

	return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &family, &len) ? -1 :
	       family;
}
