/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmv_rdm_test.h - what the target (pmv_rdm_test.c) and the initiator
 * (pmv_rdm_test_init.c) of the RDM durability test share.
 */
#ifndef PMV_RDM_TEST_H
#define PMV_RDM_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_ext_pmem.h>

#include "../../prov/pmemverbs/src/target/pmv_oracle.h"

extern const char *g_role;
#include "../common/pmv_test_check.h"

#define REG_LEN (1u << 20) /* each of the two regions */
#define MAX_PEERS 2
#define MAX_RANGES 4096
#define ROUNDS 48
#define IMMED_LEN 256u /* an FI_IMMED commit writes [data*256, +256) of A */
#define WATCHDOG_S 120
#define FENCED_OFF (512u << 10) /* fenced writes, apart from the others */

struct rdm_opt {
	const char *role, *test, *addr, *port, *file, *tfile, *oracle, *gran;
};

/* What the target publishes in FILE.keys for each region (peer i: i),
 * and its pid (rdm-sos SIGKILLs it after the last counter wait). */
struct keys {
	uint64_t key[MAX_PEERS], base[MAX_PEERS];
	int64_t pid;
};

extern struct rdm_opt g_opt;
extern struct fid_domain *g_dom;
extern struct fid_av *g_av;
extern struct fid_cq *g_cq;
extern struct fid_ep *g_ep[MAX_PEERS];
extern fi_addr_t g_peer[MAX_PEERS];
extern struct pmv_oracle_log *g_log;
extern const uint8_t *g_tmap;

int peers(void);
const char *label(void);
void *map_file(const char *path, size_t len, bool rw);
struct fi_info *rdm_info(const char *port, uint64_t flags);
void open_domain(struct fi_info *info);
struct fid_ep *open_ep(struct fi_info *info);
void oracle_map(void);
uint64_t oracle_count(void);
bool oracle_covers(uint64_t key, uint64_t lo, uint64_t hi, uint64_t from,
		   uint64_t to);
ssize_t cq_read_one(struct fi_cq_data_entry *e);
void run_initiator(void);

#endif /* PMV_RDM_TEST_H */
