/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* fi_pmem_probe: what its local and remote parts share. */
#ifndef FI_PMEM_PROBE_H
#define FI_PMEM_PROBE_H

#include <stdbool.h>

#include <rdma/fi_ext_pmem.h>

/* The method commits to a key of this profile take once the profile is
 * known, over this process's core (its name in *core if core is given). */
enum fi_pmem_method pmv_probe_method(enum fi_pmem_profile profile,
				     bool ddio_off, const char **core);

/* fi_pmem_probe -r: prints the profile table a remote target pushes. */
int pmv_probe_remote(const char *addr, const char *port);

#endif /* FI_PMEM_PROBE_H */
