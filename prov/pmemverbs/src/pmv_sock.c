/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: what kind a core wait object's fd is.
 */
#include <sys/socket.h>

#include "pmv.h"

int pmv_sock_family(int fd)
{
	int family = -1;
	socklen_t len = sizeof(family);

	return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &family, &len) ? -1 :
	       family;
}
